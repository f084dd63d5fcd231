"""The banditree HTTP service: predict and feedback over HTTP, online updates, checkpoints.

Build an app with :func:`service.main.create_app`; run it with ``banditree serve``.
"""
