"""Build, execute and grade the distributed-training course: one package per job.

    course/            build the course from source/ (generate, figures, samples, execute, workspace)
    submission/        grade one submission, step by step (pipeline.py runs them in order)
    kernel/            run a notebook in the learner's sealed kernel
    sandbox/           seal a process (kernels and program runners)
    programs/          judge exported programs outside the kernel
    classroom/         grade a class, locally or on a Dask cluster over TLS
    nbgrader_adapter/  nbgrader and formgrader, adapted
    term/              a term's records: the folder's mark, the guard of the demo's targets, backup and restore
    cli.py             ``python -m grader ...``

``layout``, ``cells``, ``results`` and ``identifiers`` are the vocabulary all of them share. Imports only go down
(docs/explanation/architecture.md; tests/test_architecture.py).
"""
