"""Build, execute and grade the distributed-training course: one package per job.

    course/            build the course from source/ (generate, figures, samples, execute, workspace)
    submission/        grade one submission, step by step (pipeline.py runs them in order)
    kernel/            run a notebook in the learner's sealed kernel
    sandbox/           seal a process (kernels and program runners)
    programs/          judge exported programs outside the kernel
    classroom/         grade a class, locally or on a Dask cluster over TLS
    nbgrader_adapter/  nbgrader and formgrader, adapted
    term/              a term's records: the folder's mark, the guard of the demo's targets, backup and restore
    lms/               grades passed back to the LMS (LTI 1.3 Assignment and Grade Services), queued on disk
    service/           the grading service: submissions graded as they arrive, Validate's diagnoses, regrades
    learner/           the learner's JupyterLab server extension (Validate, regrade requests, due dates)
    hub/               a JupyterHub for the class: accounts, roster, LTI launch, the hub's configuration
    slurm/             a one-machine Slurm whose nodes are hosts of their own; the hub's spawner on Slurm
    authoring/         a course author's tools: new-assignment and lint
    cli.py             ``python -m grader ...``

``layout``, ``cells``, ``results`` and ``identifiers`` are the vocabulary all of them share. Imports only go down
(docs/explanation/architecture.md; tests/test_architecture.py).
"""
