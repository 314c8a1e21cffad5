import sys

from django.core.management.base import BaseCommand

from support.mail_in import MalformedMessage
from support.services.mail import mail_receive

# sysexits.h: what an MTA's pipe delivery understands.
EX_DATAERR = 65


class Command(BaseCommand):
    help = (
        "Take one e-mail (RFC 822) on standard input into the help desk, as an MTA's pipe "
        "delivery runs it: a reply on its ticket, a new ticket, or nothing, with the reason. "
        "Exits 0 for mail taken or deliberately dropped (loops, floods, duplicates: the MTA "
        "must not answer those), 65 for input that is not a message."
    )

    def handle(self, *args, **options):
        raw = sys.stdin.buffer.read()
        try:
            outcome = mail_receive(raw)
        except MalformedMessage as error:
            self.stderr.write(f"not a message: {error}")
            sys.exit(EX_DATAERR)
        where = f" #{outcome.ticket.number}" if outcome.ticket else ""
        reason = f": {outcome.reason}" if outcome.reason else ""
        self.stdout.write(f"{outcome.result}{where}{reason}")
