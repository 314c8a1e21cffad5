import factory
from django.utils import timezone

from accounts.models import Account, Membership, User
from accounts.roles import Role
from servers.models import Bot, Server, ServerStatus


class UserFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = User

    email = factory.Sequence(lambda n: f"user{n}@example.com")
    name = factory.Faker("name")
    password = factory.django.Password("correct-horse-battery")


class AccountFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Account

    name = factory.Sequence(lambda n: f"Customer {n}")
    # Most tests make servers and bots without a plan, as a host billing elsewhere lets its
    # customers: an allowance beyond any quota a test sets (tests of plans set their own).
    unbilled_instances = 100_000
    unbilled_memory_mb = 100_000_000
    unbilled_cpu_percent = 100_000_000
    unbilled_disk_mb = 100_000_000


class MembershipFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Membership

    account = factory.SubFactory(AccountFactory)
    user = factory.SubFactory(UserFactory)
    role = Role.OWNER


class ServerFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Server

    account = factory.SubFactory(AccountFactory)
    name = factory.Sequence(lambda n: f"Server {n}")
    game_id = "minecraft-java"
    region_id = "eu-central"
    status = ServerStatus.RUNNING
    created_at = factory.LazyFunction(lambda: timezone.now().replace(microsecond=0))


class BotFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Bot

    account = factory.SubFactory(AccountFactory)
    name = factory.Sequence(lambda n: f"Bot {n}")
    region_id = "eu-central"
    runtime = "python-3.13"
    start_command = "python bot.py"
    status = ServerStatus.RUNNING
    token_encrypted = "not-a-real-token"
    token_last4 = "abcd"
    created_at = factory.LazyFunction(lambda: timezone.now().replace(microsecond=0))
