"""``python -m grader hub``: a real JupyterHub for a class on this machine (``make hub``, run as root).

    accounts.py            the class's Unix accounts and groups (useradd, chpasswd), their demo passwords
    install.py             the learners' environment in /opt, the course root and exchange in /srv, the checkout
                           out of the learners' reach, the settings the hub's configuration reads
    jupyterhub_config.py   JupyterHub's configuration (PAMAuthenticator, LocalProcessSpawner, the grading service)

Nothing here changes how a submission is graded: the hub runs the course's own ``python -m grader serve`` as a
managed service, and each learner's server is ``lab/learner``'s configuration on the hub's paths.
"""
