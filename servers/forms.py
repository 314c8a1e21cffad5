"""Dashboard forms for servers and bots: they parse what was typed; servers/services.py decides.

The services refuse with ``ValidationFailed`` whose ``details.fields`` name inputs the way the API
does (``resources.memory_mb``, ``variables.EULA``, ``environment.KEY``); ``add_service_error``
puts each message next to the input it names, so what was typed stays in the form.
"""

from typing import Any

from django import forms
from django.core.exceptions import ValidationError
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from hosting.dashboard.refusals import ServiceErrorFormMixin
from servers.models import RESOURCE_LIMITS, Bot, BotRuntime, Game, Region, Server
from servers.selectors import game_catalogue, region_catalogue
from servers.services import DEFAULT_BOT_RESOURCES, DEFAULT_SERVER_RESOURCES, InstanceChanges
from servers.transitions import POWER_ACTIONS

# What the create services fill in when a resource is left out; shown as the starting values.
RESOURCE_LABELS = {
    "memory_mb": (gettext_lazy("Memory (MB)"), 256),
    # xgettext:no-python-format
    "cpu_percent": (gettext_lazy("CPU (% of one core)"), 10),
    "disk_mb": (gettext_lazy("Disk (MB)"), 1024),
}
VARIABLE_PREFIX = "variable_"


class RegionChoiceField(forms.ModelChoiceField):
    def label_from_instance(self, obj: Region) -> str:
        return f"{obj.name} ({obj.location})"


class InstanceForm(ServiceErrorFormMixin, forms.Form):
    """Name, resources and auto-restart, which servers and bots share.

    ``resources.memory_mb`` and ``variables.EULA`` each point at an input of their own.
    """

    name = forms.CharField(label=gettext_lazy("Name"), max_length=100)
    auto_restart = forms.BooleanField(
        required=False,
        initial=True,
        label=gettext_lazy("Restart automatically after a crash"),
        help_text=gettext_lazy("At most 3 times in 10 minutes."),
    )

    def __init__(self, *args, resources: dict[str, int], **kwargs):
        super().__init__(*args, **kwargs)
        for name, (label, step) in RESOURCE_LABELS.items():
            low, high = RESOURCE_LIMITS[name]
            # Empty means "leave it to the service": its default on create, unchanged on edit.
            self.fields[name] = forms.IntegerField(
                label=label,
                required=False,
                initial=resources[name],
                help_text=_("%(low)s to %(high)s.") % {"low": low, "high": high},
                widget=forms.NumberInput(attrs={"min": low, "max": high, "step": step}),
            )

    def field_for(self, service_name: str) -> str | None:
        """The input a service's field name points at: ``resources.memory_mb`` → memory_mb."""
        area, _dot, rest = service_name.partition(".")
        name = {"resources": rest, "variables": VARIABLE_PREFIX + rest}.get(area, area)
        return name if name in self.fields else None

    def resources(self) -> dict[str, int]:
        return {
            name: self.cleaned_data[name]
            for name in RESOURCE_LIMITS
            if self.cleaned_data.get(name) is not None
        }

    def instance_changes(self) -> InstanceChanges:
        """What ``instance_update`` takes from an edit form: its ``changes()``, which the
        form's fields have typed, trimmed and bounded."""
        return InstanceChanges.of(self.changes())


# --- Servers ----------------------------------------------------------------------------------


class GameChoiceForm(forms.Form):
    """The first step of creating a server: the game decides which variables the form asks for."""

    game = forms.ModelChoiceField(
        queryset=game_catalogue(),
        to_field_name="slug",
        label=gettext_lazy("Game"),
        empty_label=gettext_lazy("Choose a game…"),
    )


def variable_field(definition: dict[str, Any]) -> forms.Field:
    """One input for one of the game's variable definitions; the service checks the value."""
    kind, label = definition["type"], definition["name"]
    hints = []
    if definition.get("required"):
        hints.append(_("Required."))
    if kind == "boolean":
        field = forms.BooleanField(required=False, label=label)
    elif kind == "enum":
        choices = [(choice, choice) for choice in definition["choices"]]
        if "default" not in definition:
            choices.insert(0, ("", "—"))
        field = forms.ChoiceField(required=False, label=label, choices=choices)
    elif kind == "integer":
        low, high = definition.get("min"), definition.get("max")
        if low is not None and high is not None:
            hints.append(_("%(low)s to %(high)s.") % {"low": low, "high": high})
        attrs = {key: value for key, value in (("min", low), ("max", high)) if value is not None}
        field = forms.IntegerField(required=False, label=label, widget=forms.NumberInput(attrs))
    else:
        # Kept as typed (no stripping): a password may well end in a space.
        field = forms.CharField(required=False, label=label, strip=False)
        if "max_length" in definition:
            field.widget.attrs["maxlength"] = definition["max_length"]
    field.help_text = " ".join(hints)
    if "default" in definition:
        field.initial = definition["default"]
    return field


class ServerForm(InstanceForm):
    """A server's settings: the shared ones plus one input per variable of its game."""

    restart_when_not_responding = forms.BooleanField(
        required=False,
        initial=False,
        label=gettext_lazy("Restart when it stops responding"),
        help_text=gettext_lazy(
            "When the game stops answering its status query while its process runs "
            "(games with a query only), as after a crash: at most 3 times in 10 minutes."
        ),
    )

    def __init__(self, *args, game: Game, values: dict[str, Any] | None = None, **kwargs):
        super().__init__(*args, **kwargs)
        # What the game keeps from customers is not asked (its default holds).
        self.definitions = [d for d in game.variables if d.get("visible", True) is not False]
        for definition in self.definitions:
            field = variable_field(definition)
            if values is not None and definition["key"] in values:
                field.initial = values[definition["key"]]
            if definition.get("editable", True) is False:
                field.disabled = True
                field.help_text = _("Set by the host.")
            self.fields[VARIABLE_PREFIX + definition["key"]] = field

    def variable_fields(self) -> list[forms.BoundField]:
        return [self[VARIABLE_PREFIX + definition["key"]] for definition in self.definitions]

    def variables(self) -> dict[str, Any]:
        """What was entered; an empty number or choice is left to the service (default/required)."""
        values = {}
        for definition in self.definitions:
            value = self.cleaned_data.get(VARIABLE_PREFIX + definition["key"])
            if definition.get("editable", True) is False:
                continue
            if value is None or (value == "" and definition["type"] != "string"):
                continue
            values[definition["key"]] = value
        return values

    def changes(self) -> dict[str, Any]:
        """What both ``server_create`` and ``instance_update`` take from this form."""
        return {
            "name": self.cleaned_data["name"],
            "resources": self.resources(),
            "variables": self.variables(),
            "auto_restart": self.cleaned_data["auto_restart"],
            "restart_when_not_responding": self.cleaned_data["restart_when_not_responding"],
        }


class ServerCreateForm(ServerForm):
    region = RegionChoiceField(
        queryset=region_catalogue(), empty_label=None, label=gettext_lazy("Region")
    )
    start_on_install = forms.BooleanField(
        required=False, label=gettext_lazy("Start the server as soon as it is installed")
    )

    def __init__(self, *args, game: Game, **kwargs):
        super().__init__(*args, game=game, resources=DEFAULT_SERVER_RESOURCES, **kwargs)


class ServerEditForm(ServerForm):
    def __init__(self, *args, server: Server, **kwargs):
        resources = {name: getattr(server, name) for name in RESOURCE_LIMITS}
        kwargs["initial"] = {
            "name": server.name,
            "auto_restart": server.auto_restart,
            "restart_when_not_responding": server.restart_when_not_responding,
        } | (kwargs.get("initial") or {})
        super().__init__(
            *args, game=server.game, values=server.variables, resources=resources, **kwargs
        )


# --- Bots -------------------------------------------------------------------------------------


class EnvironmentField(forms.CharField):
    """``KEY=value`` lines → a dict; blank lines and ``# comments`` are skipped."""

    widget = forms.Textarea(
        attrs={"rows": 5, "placeholder": "LOG_LEVEL=info", "spellcheck": "false"}
    )

    def __init__(self, **kwargs):
        super().__init__(required=False, strip=False, **kwargs)

    def prepare_value(self, value):
        if isinstance(value, dict):
            return "\n".join(f"{key}={item}" for key, item in value.items())
        return value

    def to_python(self, value) -> dict[str, str]:
        environment: dict[str, str] = {}
        for number, line in enumerate((value or "").splitlines(), start=1):
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            key, equals, item = line.partition("=")
            key = key.strip()
            if not equals or not key:
                raise ValidationError(
                    _("Line %(number)s: write KEY=value.") % {"number": number}, code="invalid"
                )
            if key in environment:
                raise ValidationError(
                    _("Line %(number)s: %(key)s is set twice.") % {"number": number, "key": key},
                    code="duplicate",
                )
            environment[key] = item
        return environment


class BotForm(InstanceForm):
    runtime = forms.ChoiceField(label=gettext_lazy("Runtime"), choices=BotRuntime.choices)
    start_command = forms.CharField(
        label=gettext_lazy("Start command"),
        max_length=500,
        widget=forms.TextInput(attrs={"placeholder": "python bot.py", "spellcheck": "false"}),
    )
    environment = EnvironmentField(
        label=gettext_lazy("Environment"),
        help_text=gettext_lazy(
            "One <code>KEY=value</code> per line; names are letters, digits and _."
        ),
    )
    # Never rendered back: a form sent with an error comes back with this input empty.
    token = forms.CharField(
        label=gettext_lazy("Discord bot token"),
        widget=forms.PasswordInput(
            render_value=False, attrs={"autocomplete": "off", "spellcheck": "false"}
        ),
        help_text=gettext_lazy("Stored encrypted; nobody, you included, can read it back."),
    )

    source_kind = forms.ChoiceField(
        label=gettext_lazy("Code"),
        required=False,
        choices=[
            ("", gettext_lazy("None: the start command needs no code from us")),
            ("git", gettext_lazy("A git repository")),
            ("archive", gettext_lazy("An archive at a URL (.tar.gz, .zip)")),
            ("upload", gettext_lazy("Upload an archive (.tar.gz, .zip)")),
        ],
        help_text=gettext_lazy("Fetched onto the node at install; change it, then reinstall."),
    )
    source_url = forms.CharField(
        label=gettext_lazy("Repository or archive URL"),
        required=False,
        max_length=500,
        widget=forms.URLInput(attrs={"placeholder": "https://github.com/you/your-bot.git"}),
    )
    source_ref = forms.CharField(
        label=gettext_lazy("Branch or tag"),
        required=False,
        max_length=100,
        help_text=gettext_lazy("git only; optional."),
    )
    source_file = forms.FileField(label=gettext_lazy("Archive"), required=False)

    def field_for(self, service_name: str) -> str | None:
        """``source.url`` is the URL input, ``source.ref`` the branch, ``file`` the archive."""
        named = {"source.url": "source_url", "source.ref": "source_ref", "file": "source_file"}
        if service_name in named:
            return named[service_name]
        if service_name.startswith("source"):
            return "source_kind"
        return super().field_for(service_name)

    def clean(self):
        cleaned = super().clean()
        kind = cleaned.get("source_kind")
        if kind in {"git", "archive"} and not cleaned.get("source_url"):
            self.add_error("source_url", _("Give the URL of the code."))
        if kind == "upload" and not cleaned.get("source_file") and not self.has_upload():
            self.add_error("source_file", _("Choose the archive to upload."))
        return cleaned

    def has_upload(self) -> bool:
        """Whether the bot already has uploaded code (kept when no new file is chosen)."""
        return False

    def source_changes(self) -> dict[str, Any]:
        kind = self.cleaned_data.get("source_kind")
        if kind in {"git", "archive"}:
            source = {"type": kind, "url": self.cleaned_data["source_url"].strip()}
            if kind == "git" and self.cleaned_data.get("source_ref"):
                source["ref"] = self.cleaned_data["source_ref"].strip()
            return {"source": source}
        if kind == "upload":
            upload = self.cleaned_data.get("source_file")
            return {"archive": (upload.name, upload.read())} if upload else {}
        return {"source": None}

    def changes(self) -> dict[str, Any]:
        return {
            "name": self.cleaned_data["name"],
            "runtime": self.cleaned_data["runtime"],
            "start_command": self.cleaned_data["start_command"],
            "environment": self.cleaned_data["environment"],
            "resources": self.resources(),
            "auto_restart": self.cleaned_data["auto_restart"],
            **self.source_changes(),
        }


class BotCreateForm(BotForm):
    region = RegionChoiceField(
        queryset=region_catalogue(), empty_label=None, label=gettext_lazy("Region")
    )

    def __init__(self, *args, **kwargs):
        super().__init__(*args, resources=DEFAULT_BOT_RESOURCES, **kwargs)


class BotEditForm(BotForm):
    def __init__(self, *args, bot: Bot, **kwargs):
        resources = {name: getattr(bot, name) for name in RESOURCE_LIMITS}
        kwargs["initial"] = {
            "name": bot.name,
            "runtime": bot.runtime,
            "start_command": bot.start_command,
            "environment": bot.environment,
            "auto_restart": bot.auto_restart,
            "source_kind": bot.source_type,
            "source_url": bot.source_url,
            "source_ref": bot.source_ref,
        } | (kwargs.get("initial") or {})
        self.bot = bot
        super().__init__(*args, resources=resources, **kwargs)
        if bot.source_type == "upload":
            name = bot.source_archive.name.rsplit("/", 1)[-1]
            self.fields["source_file"].help_text = _(
                "Now: %(name)s. Choose a file to replace it."
            ) % {"name": name}
        token = self.fields["token"]
        token.required, token.label = False, _("New Discord bot token")
        token.help_text = _("Leave empty to keep the current token (…%(last4)s).") % {
            "last4": bot.token_last4
        }

    def has_upload(self) -> bool:
        return self.bot.source_type == "upload"

    def changes(self) -> dict[str, Any]:
        changes = super().changes()
        if self.cleaned_data["token"]:
            changes["token"] = self.cleaned_data["token"]
        return changes


class PowerActionForm(forms.Form):
    type = forms.ChoiceField(choices=[(name, name) for name in POWER_ACTIONS])
