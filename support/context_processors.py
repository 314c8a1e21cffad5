"""Template context of every dashboard page that the desk adds: its link in the navigation."""

from support.selectors import departments_of_staff


def desk(request) -> dict:
    """``can_use_desk``, with or without an account of one's own; a callable, so only pages that
    draw the navigation ask, and only for staff whose role works the desk."""
    user = getattr(request, "user", None)
    return {
        "can_use_desk": lambda: bool(
            user is not None
            and getattr(user, "works_desk", False)
            and departments_of_staff(user).exists()
        )
    }
