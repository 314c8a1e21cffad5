"""The databases app's periodic upkeep (run by ``manage.py housekeeping``)."""

from databases.services import databases_drop_deleted


def run() -> dict[str, int]:
    return {"deleted instances' databases dropped": databases_drop_deleted()}
