"""Build, execute and grade the distributed-training course: one package per job.

    course/            build the course from source/ (generate, figures, samples, execute, workspace)
    sandbox/           seal a process (kernels and program runners)
    learner/           the learner's JupyterLab server extension (Validate, regrade requests, due dates)
    slurm/             a one-machine Slurm whose nodes are hosts of their own; the hub's spawner on Slurm
    term/              a term's records: the gradebook's files, the history, the attempts ledger, the folder's
                       mark, the guard of the demo's targets, backup and restore
    programs/          judge exported programs outside the kernel
    kernel/            run a notebook in the learner's sealed kernel
    submission/        grade one submission, step by step (pipeline.py runs them in order)
    classroom/         grade a class, locally or on a Dask cluster over TLS
    nbgrader_adapter/  nbgrader and formgrader, adapted
    lms/               grades passed back to the LMS (LTI 1.3 Assignment and Grade Services), queued on disk
    service/           the grading service: submissions graded as they arrive, Validate's diagnoses, regrades
    hub/               a JupyterHub for the class: accounts, roster, LTI launch, the hub's configuration
    authoring/         a course author's tools: new-assignment and lint
    cli.py             ``python -m grader ...``

``layout``, ``cells``, ``results``, ``identifiers``, ``visible_checks`` and ``raised`` are the vocabulary all of them
share. Imports only go down the ranks, lowest first: the vocabulary (cells, identifiers, layout, raised, results,
visible_checks) < course, learner, sandbox, slurm, term < programs < kernel < submission < classroom, lms,
nbgrader_adapter < authoring, hub, rubric, service < cli; no module is longer than 450 lines
(tests/test_architecture.py's RANK and MAX_LINES; docs/explanation/architecture.md).
"""
