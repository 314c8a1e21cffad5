"""The OpenAPI documentation of the report endpoints: the report's shape, the parameters, the
examples (JSON and CSV, each CSV written from its JSON example by the same writer) and the
documented errors."""

from typing import Any

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiExample, OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import serializers

from analytics.reporting import COLUMN_TYPES, Column, Report
from analytics.representations import report_csv, report_representation
from analytics.selectors.reports_billing import (
    AGING_COLUMNS,
    REVENUE_COLUMNS,
    SPEND_COLUMNS,
)
from analytics.selectors.reports_mrr import CHURN_COLUMNS, MRR_COLUMNS
from analytics.selectors.reports_operations import FLEET_COLUMNS, TICKET_COLUMNS
from analytics.selectors.reports_usage import UPTIME_COLUMNS, USAGE_COLUMNS
from hosting.api.schema import envelope, error_doc
from hosting.money import SUPPORTED_CURRENCIES

SPEND_GROUPS = ("month", "server")
REVENUE_GROUPS = ("product", "month")
AR_AGING_GROUPS = ("bucket", "account")
FLEET_GROUPS = ("status", "node", "region")

TYPES = (
    "`month` `YYYY-MM`, `date` `YYYY-MM-DD` and `time` `YYYY-MM-DDTHH:MM:SSZ` (UTC); "
    "`string`; `integer`; `money` an integer "
    "in the minor unit of the currency named by the row's column given in the column's "
    "`currency` (amounts of different currencies are never added up); `percent` a fraction "
    "of 1 with at most 4 decimals (`0.0525` is 5.25 %); `seconds`, `count` and `bytes` whole "
    "numbers; `number` a number with at most 2 decimals (CPU in % of one core, may pass 100). "
    "A figure that cannot be worked out (a rate of nothing) is null."
)


class ReportColumnSerializer(serializers.Serializer):
    name = serializers.CharField(help_text="The key of this column in every row.")
    type = serializers.ChoiceField(choices=COLUMN_TYPES, help_text=TYPES)
    label = serializers.CharField(help_text="A title for people; its wording may change.")
    currency = serializers.CharField(
        required=False,
        help_text="`money` columns only: the name of the row's column that holds the ISO 4217 "
        "code of the amount (`currency`).",
    )


class ReportSerializer(serializers.Serializer):
    name = serializers.CharField(help_text="The report: `spend`, `mrr`, `revenue`, ...")
    parameters = serializers.DictField(
        help_text="The parameters the report was made with, defaults filled in and normalised "
        "(`currency` upper case, null for all)."
    )
    columns = ReportColumnSerializer(many=True, help_text="The rows' keys, in order.")
    rows = serializers.ListField(
        child=serializers.DictField(),
        help_text="One object per row, keyed by the columns' names. The CSV export has the "
        "same rows, a header row of the columns' names first.",
    )


ANSWER = (
    "The report in the envelope (`data.report`), or with `format=csv` the same rows as a "
    "download (`text/csv; charset=utf-8`, "
    '`Content-Disposition: attachment; filename="<report>-<parameters>.csv"`), a header row '
    "of the column names, then one line per row; money in minor units, null as an empty cell, "
    "text that a spreadsheet would take for a formula (starting with `=`, `+`, `-`, `@`, a tab "
    "or a carriage return, also after blanks or invisible characters, in fullwidth form, or "
    "after a `;` or `,` list separator) gets a `'` before that character."
)
# One component for every report: built once (each envelope() call makes a new one).
REPORT_RESPONSE = OpenApiResponse(envelope("report", ReportSerializer()), description=ANSWER)
CSV_RESPONSE = OpenApiResponse(OpenApiTypes.STR, description=ANSWER)
BAD_PARAMETER = error_doc(
    400,
    "invalid_parameter",
    "`invalid_parameter` (details.parameters): a malformed or unknown value, a parameter "
    "given twice, `start_month` after `end_month`, `end_month` after this month, a range of "
    "more than 120 months, an unsupported `currency`.",
    "Query parameter 'start_month' may not be after end_month.",
    {
        "parameters": [
            {
                "name": "start_month",
                "code": "invalid",
                "message": "Query parameter 'start_month' may not be after end_month.",
            }
        ]
    },
)

MONTH_PATTERN = "^[0-9]{4}-(0[1-9]|1[0-2])$"
FORMAT = OpenApiParameter(
    "format",
    str,
    enum=["json", "csv"],
    description="`json` (the default): the report in the envelope. `csv`: the same rows as a "
    "CSV download. Errors are the JSON error envelope either way.",
)
START_MONTH = OpenApiParameter(
    "start_month",
    str,
    pattern=MONTH_PATTERN,
    description="The first month, `YYYY-MM` (UTC), included; 1970-01 or later, at most 120 "
    "months before `end_month`. Default: 11 months before `end_month` (12 months in all).",
)
END_MONTH = OpenApiParameter(
    "end_month",
    str,
    pattern=MONTH_PATTERN,
    description="The last month, `YYYY-MM` (UTC), included; not after the current month. "
    "Default: the current month (its figures so far).",
)
CURRENCY = OpenApiParameter(
    "currency",
    str,
    enum=sorted(SUPPORTED_CURRENCIES),
    description="Only this currency (ISO 4217). Default: every currency, each in rows of its own.",
)
AS_OF = OpenApiParameter(
    "as_of",
    str,
    pattern="^[0-9]{4}-[0-9]{2}-[0-9]{2}$",
    description="The day (`YYYY-MM-DD`, UTC) at whose end the invoices are aged: what was owed "
    "then, however it was paid since. Default: today.",
)


def _group_by(choices: tuple[str, ...], text: str) -> OpenApiParameter:
    return OpenApiParameter("group_by", str, enum=list(choices), description=text)


def _examples(
    title: str, name: str, parameters: dict[str, Any], columns, rows: list[dict[str, Any]]
) -> list[OpenApiExample]:
    """A JSON example and the CSV the same report downloads as."""
    report = Report(name, parameters, columns, rows)
    return [
        OpenApiExample(
            title,
            value={"report": report_representation(report)},
            response_only=True,
            status_codes=["200"],
        ),
        OpenApiExample(
            f"{title} (CSV)",
            value=report_csv(report),
            response_only=True,
            status_codes=["200"],
            media_type="text/csv",
        ),
    ]


def _doc(
    summary: str,
    description: str,
    parameters: list[OpenApiParameter],
    examples: list[OpenApiExample],
    *,
    tag: str = "Staff",
):
    return extend_schema(
        summary=summary,
        description=description,
        parameters=[*parameters, FORMAT],
        responses={
            (200, "application/json"): REPORT_RESPONSE,
            (200, "text/csv"): CSV_RESPONSE,
            400: BAD_PARAMETER,
        },
        examples=examples,
        tags=[tag],
    )


STAFF = " Staff keys with `admin:read`."
NO_TEST_CLOCKS = " Accounts on a billing test clock (demos, tests) are left out."


MONTHS = {"start_month": "2026-09", "end_month": "2026-10"}
EUR_MONTHS = MONTHS | {"currency": "EUR"}
PRODUCT_ID = "prod_7Hq2LmT0sWc8RkP1nZa7Y4Xb"
SERVER_ID = "srv_9fKx2QmLpT4sVw8YbN3cR6Ea"
BOT_ID = "bot_3TwQ8nLx5KpZ2mV7cR9sY4Hd"
ACCOUNT_ROW = ("acct_5Rt8YpQ2wX7nL3mK9vB4cJ6e", "Blockworks GmbH", "EUR", 2, 0, 2380, 1190, 0, 3570)
BILLING, TECHNICAL = "dept_2Lm8Qx4Tn7Vb3Kc9Rw5Ys1Hd", "dept_8Vn3Kx7Qm2Tb5Lc4Rw9Ys6Hd"
TICKET_ROWS = [
    ("2026-10", BILLING, "Billing", 48, 47, 1320, 6900, 45, 5400, 30600, 3, 0.0625),
    ("2026-10", TECHNICAL, "Technical", 212, 205, 2460, 10800, 190, 14400, 86400, 21, 0.0991),
]
CHURN_ROWS = [
    ("2026-09", "EUR", 820, 19, 0.0232, 1250000, -31200, -7200, 15600, 2400, 0.0307, 0.0163),
    ("2026-10", "EUR", 851, 14, 0.0165, 1277600, -24000, -4800, 9600, 0, 0.0225, 0.015),
]
NODE_ROW = (
    "node_4Qx8Lm2Tn7Vb3Kc9Rw5Ys1Hd",
    "fsn1-07",
    "eu-central",
    131072,
    98304,
    0.75,
    1966080,
    614400,
    0.3125,
    200,
    43,
)


def _rows(columns: tuple[Column, ...], *values: tuple) -> list[dict[str, Any]]:
    """Example rows written as tuples in the columns' order."""
    return [dict(zip([column.name for column in columns], row, strict=True)) for row in values]


SPEND_DOC = _doc(
    "Spend report",
    "What the account's invoices came to: the invoices finalized in each month (void ones "
    "left out), their totals (`billed`, tax included), what of them was paid and credited so "
    "far and what is still due. `group_by=month` lists every month of the range in each "
    "currency billed; `group_by=server` adds them up per server or bot of each invoice's "
    "subscription, most billed first (`kind` `other`: invoices of no server or bot, such as "
    "manual ones). Keys with `analytics:read` and `billing:read` (it is invoice money, which "
    "roles without billing access do not see); only the key's own account.",
    [
        START_MONTH,
        END_MONTH,
        _group_by(SPEND_GROUPS, "`month` (the default) or `server` (servers and bots)."),
    ],
    [
        *_examples(
            "By month",
            "spend",
            MONTHS | {"group_by": "month"},
            SPEND_COLUMNS["month"],
            _rows(
                SPEND_COLUMNS["month"],
                ("2026-09", "EUR", 3, 4760, 4760, 0, 0),
                ("2026-10", "EUR", 2, 3570, 1190, 0, 2380),
            ),
        ),
        *_examples(
            "By server",
            "spend",
            MONTHS | {"group_by": "server"},
            SPEND_COLUMNS["server"],
            _rows(
                SPEND_COLUMNS["server"],
                ("server", SERVER_ID, "Survival SMP", "EUR", 2, 4760, 2380, 0, 2380),
                ("bot", BOT_ID, "Moderation bot", "EUR", 2, 1190, 1190, 0, 0),
                ("other", None, None, "EUR", 1, 2380, 2380, 0, 0),
            ),
        ),
    ],
    tag="Analytics",
)

USAGE_REPORT_DOC = _doc(
    "Usage report",
    "Per month and server or bot that reported (months in order, then by name): its samples, "
    "average and peak CPU (in % of one core) and memory, the most disk it used, bytes "
    "received and sent. From the day rollups, which are kept for ever; a server or bot "
    "deleted since keeps its rows, under its last name, with `deleted_at`. Keys with "
    "`analytics:read` see the rows of the servers if they also hold `servers:read`, of the "
    "bots if they also hold `bots:read`; only the key's own account.",
    [START_MONTH, END_MONTH],
    _examples(
        "Two months of one server",
        "usage",
        MONTHS,
        USAGE_COLUMNS,
        _rows(
            USAGE_COLUMNS,
            (
                "2026-09",
                "server",
                SERVER_ID,
                "Survival SMP",
                259200,
                38.5,
                187.25,
                3221225472,
                4294967296,
                8589934592,
                18,
                48318382080,
                193273528320,
                None,
            ),
            (
                "2026-10",
                "server",
                SERVER_ID,
                "Survival SMP",
                267840,
                41.02,
                200.0,
                3435973837,
                4294967296,
                9663676416,
                18,
                51539607552,
                206158430208,
                None,
            ),
        ),
    ),
    tag="Analytics",
)

UPTIME_REPORT_DOC = _doc(
    "Uptime report",
    "Per month and server or bot: `uptime`, the share of the time it was meant to run during "
    "which it ran (null when it was never meant to run), the seconds up and down, and the "
    "incidents (crashes) that began in the month; worked out from its status changes and "
    "crashes as `GET /v1/servers/{id}/uptime` does (the event log, and before it the days "
    "housekeeping recorded); a month none of whose days is known has no figures (null). A "
    "server or bot deleted since is listed in the months it existed, under its last name, "
    "with `deleted_at`. Keys with `analytics:read` see the rows of the servers if they also "
    "hold `servers:read`, of the bots if they also hold `bots:read`; only the key's own "
    "account.",
    [START_MONTH, END_MONTH],
    _examples(
        "A month with one crash",
        "uptime",
        {"start_month": "2026-10", "end_month": "2026-10"},
        UPTIME_COLUMNS,
        _rows(
            UPTIME_COLUMNS,
            (
                "2026-10",
                "bot",
                BOT_ID,
                "Moderation bot",
                1.0,
                1296000,
                0,
                0,
                "2026-10-16T00:00:00Z",
            ),
            ("2026-10", "server", SERVER_ID, "Survival SMP", 0.9996, 2677200, 1200, 1, None),
        ),
    ),
    tag="Analytics",
)

MRR_DOC = _doc(
    "MRR report",
    (
        "Monthly recurring revenue per month and currency, from the MRR snapshot taken at "
        "the start of every day. A subscription's MRR is its price times its quantity, less "
        "a repeating or permanent coupon in force (a one-off coupon does not count), brought "
        "to a month (a yearly amount / 12, a weekly one times 52/12, a daily one times 365/12) and "
        "rounded once, half up, before tax; "
        "`active` and `past_due` subscriptions count, `trialing`, `incomplete`, `unpaid` and "
        "`canceled` ones do not. `mrr_start` is the MRR at the month's first day, `mrr_end` "
        "at the next month's (the latest snapshot for this month). Each account's MRR is "
        "compared from one day to the next: from 0 it is `new` (never had MRR before) or "
        "`reactivation`; to 0 it is `churn`; otherwise `expansion` or `contraction`. "
        "Contraction and churn are negative, and every row adds up: `mrr_start + new + "
        "reactivation + expansion + contraction + churn = mrr_end`."
    )
    + STAFF
    + NO_TEST_CLOCKS,
    [START_MONTH, END_MONTH, CURRENCY],
    _examples(
        "Two months",
        "mrr",
        EUR_MONTHS,
        MRR_COLUMNS,
        _rows(
            MRR_COLUMNS,
            ("2026-09", "EUR", 1250000, 48000, 2400, 15600, -7200, -31200, 1277600),
            ("2026-10", "EUR", 1277600, 52800, 0, 9600, -4800, -24000, 1311200),
        ),
    ),
)

CHURN_DOC = _doc(
    "Churn report",
    (
        "Customer and revenue churn per month and currency, from the same daily MRR "
        "snapshots as the MRR report. `customers_start`: accounts with MRR at the month's "
        "start; `customers_churned`: those of them with none at its end (customers won "
        "during the month are in neither), `customer_churn_rate` their share. "
        "`gross_revenue_churn_rate`: what was lost (churn and contraction) over the MRR at "
        "the start; `net_revenue_churn_rate`: that less what customers added (expansion and "
        "reactivation), negative when they added more than was lost. Movements are signed "
        "as in the MRR report (churn and contraction negative)."
    )
    + STAFF
    + NO_TEST_CLOCKS,
    [START_MONTH, END_MONTH, CURRENCY],
    _examples(
        "Two months",
        "churn",
        EUR_MONTHS,
        CHURN_COLUMNS,
        _rows(CHURN_COLUMNS, *CHURN_ROWS),
    ),
)

REVENUE_DOC = _doc(
    "Revenue report",
    (
        "Revenue per month, currency and product (`group_by=product`) or per month and "
        "currency (`group_by=month`, every month of the range). `billed`: what the invoices "
        "finalized that month charged, tax included (void invoices left out), `tax` the part "
        "of it that is tax (net revenue is `billed - tax`); `credited`: credit notes issued "
        "that month; `collected`: money received that month (cards, bank transfers; a payment "
        "refunded later still counts here, its refund is a credit note); `credit_applied`: "
        "the customers' account credit that paid invoices that month (no money received). "
        "Credit notes and payments are spread over the products of their invoice in "
        "proportion to what its lines charged; lines without a product (manual ones) are "
        "under `product_id` null, `product_name` `Other`."
    )
    + STAFF
    + NO_TEST_CLOCKS,
    [
        START_MONTH,
        END_MONTH,
        CURRENCY,
        _group_by(REVENUE_GROUPS, "`product` (the default) or `month` (all products)."),
    ],
    _examples(
        "By product",
        "revenue",
        EUR_MONTHS | {"group_by": "product"},
        REVENUE_COLUMNS["product"],
        _rows(
            REVENUE_COLUMNS["product"],
            ("2026-10", "EUR", PRODUCT_ID, "Minecraft 4 GB", 142800, 22800, 1190, 130900, 2380),
            ("2026-10", "EUR", None, "Other", 5950, 950, 0, 5950, 0),
        ),
    ),
)

AR_AGING_DOC = _doc(
    "Accounts receivable aging",
    (
        "What customers owed at the end of `as_of` (open and uncollectible invoices, "
        "reconstructed from the payments and credit notes dated before then), by the whole "
        "days from each invoice's due date to `as_of`: `days_0_30` (not yet due included), "
        "`days_31_60`, `days_61_90`, `days_over_90`. `group_by=bucket`: per currency, the four "
        "buckets with their invoices and amount; `group_by=account`: per account and "
        "currency, a column per bucket, by currency then largest total first."
    )
    + STAFF
    + NO_TEST_CLOCKS,
    [
        AS_OF,
        CURRENCY,
        _group_by(AR_AGING_GROUPS, "`bucket` (the default) or `account`."),
    ],
    [
        *_examples(
            "By bucket",
            "ar_aging",
            {"as_of": "2026-10-31", "group_by": "bucket", "currency": "EUR"},
            AGING_COLUMNS["bucket"],
            _rows(
                AGING_COLUMNS["bucket"],
                ("EUR", "days_0_30", 41, 97580),
                ("EUR", "days_31_60", 6, 14280),
                ("EUR", "days_61_90", 2, 4760),
                ("EUR", "days_over_90", 1, 1190),
            ),
        ),
        *_examples(
            "By account",
            "ar_aging",
            {"as_of": "2026-10-31", "group_by": "account", "currency": None},
            AGING_COLUMNS["account"],
            _rows(AGING_COLUMNS["account"], ACCOUNT_ROW),
        ),
    ],
)

TICKETS_DOC = _doc(
    "Tickets report",
    (
        "Per month and department (those the key's user works; all for superusers, as the "
        "staff ticket list): tickets opened that month (duplicates merged into another left "
        "out); `responded` and the first response's p50 and p90, in business seconds on the "
        "department's SLA calendar from the opening to the first public staff reply (the "
        "clock of the first-response target; around the clock without a policy); `resolved` "
        "(resolved or closed) and the resolution's p50 and p90, the business seconds the "
        "ticket waited on staff (the clock of the resolution target, paused while it waits "
        "on the customer or is on hold); `sla_breached`, the tickets the desk flagged past a "
        "first-response or resolution target, and their share. Percentiles are nearest-rank "
        "(the value at rank ceil(p * n / 100) of the n values sorted), over the tickets "
        "answered or resolved so far."
    )
    + STAFF,
    [START_MONTH, END_MONTH],
    _examples(
        "One month",
        "tickets",
        {"start_month": "2026-10", "end_month": "2026-10"},
        TICKET_COLUMNS,
        _rows(TICKET_COLUMNS, *TICKET_ROWS),
    ),
)

FLEET_DOC = _doc(
    "Fleet report",
    (
        "The fleet now. `group_by=status`: live servers and bots (not deleted) per region "
        "and status. `group_by=node`: each node's memory and disk, what its servers and bots "
        "were given of them and its pool of addresses (`ip:port`, held by a server or free). "
        "`group_by=region`: the nodes of each region summed up."
    )
    + STAFF,
    [_group_by(FLEET_GROUPS, "`status` (the default), `node` or `region`.")],
    [
        *_examples(
            "By status",
            "fleet",
            {"group_by": "status"},
            FLEET_COLUMNS["status"],
            _rows(
                FLEET_COLUMNS["status"],
                ("server", "eu-central", "running", 412),
                ("server", "eu-central", "stopped", 57),
                ("bot", "eu-central", "running", 96),
            ),
        ),
        *_examples(
            "By node",
            "fleet",
            {"group_by": "node"},
            FLEET_COLUMNS["node"],
            _rows(FLEET_COLUMNS["node"], NODE_ROW),
        ),
    ],
)
