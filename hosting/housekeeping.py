"""Periodic upkeep, gathered from the apps without importing them.

Each app that has upkeep keeps it in its own ``<app>/upkeep.py``: a ``run()`` that does its
work and returns ``{"what": count, ...}``. ``manage.py housekeeping`` runs them in the order of
INSTALLED_APPS, so a new app joins by adding the module, and this package imports no app.
"""

from collections.abc import Callable
from importlib import import_module

from django.apps import apps
from django.utils.module_loading import module_has_submodule

MODULE = "upkeep"


def upkeep_steps() -> list[tuple[str, Callable[[], dict[str, int]]]]:
    """``(app label, run)`` for every installed app with an upkeep module."""
    return [
        (config.label, import_module(f"{config.name}.{MODULE}").run)
        for config in apps.get_app_configs()
        if module_has_submodule(config.module, MODULE)
    ]


def upkeep_run() -> dict[str, int]:
    """Run every app's upkeep once; what each did, by name."""
    report: dict[str, int] = {}
    for _label, run in upkeep_steps():
        report |= run()
    return report
