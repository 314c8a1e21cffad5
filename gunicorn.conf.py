"""Production gunicorn settings: ``gunicorn hosting.wsgi -c gunicorn.conf.py``.

Sync workers (each request is short and bound by the database on loopback); the number of
workers comes from ``WEB_CONCURRENCY`` (default 2), the address from ``GUNICORN_BIND`` (or
``0.0.0.0:$PORT`` when a platform sets ``PORT``, else 127.0.0.1:8000). No access log unless
``GUNICORN_ACCESS_LOG`` names a file (``-`` for standard output): the service logs its own
request ids. The app is loaded once in the master and forked, so workers start fast; database
connections are opened lazily in each worker, never shared across the fork.
"""

import os


def _bind() -> str:
    if bind := os.environ.get("GUNICORN_BIND"):
        return bind
    if port := os.environ.get("PORT"):
        return f"0.0.0.0:{port}"
    return "127.0.0.1:8000"


bind = [_bind()]
worker_class = "sync"
workers = int(os.environ.get("WEB_CONCURRENCY", "2"))
preload_app = True
accesslog = os.environ.get("GUNICORN_ACCESS_LOG") or None
errorlog = "-"
loglevel = os.environ.get("GUNICORN_LOG_LEVEL", "info")
timeout = int(os.environ.get("GUNICORN_TIMEOUT", "30"))
graceful_timeout = 10
# The kernel's accept queue holds connections while every sync worker is busy.
backlog = 2048
# Gunicorn's default, stated because the API documents it: a longer request line is answered
# 414 by gunicorn itself, before the application (hosting/api/schema.py, URI_TOO_LONG).
limit_request_line = 4094
