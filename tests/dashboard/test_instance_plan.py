"""A server's or bot's page says what it costs (issue 34, item 5): its plan, price and next
renewal, with the ways to change or cancel it, for the roles that see billing."""

from accounts.roles import Role
from tests.dashboard import signed_in
from tests.factories import (
    BotFactory,
    MembershipFactory,
    PriceFactory,
    ServerFactory,
    SubscriptionFactory,
)


def plan_card(client, path: str) -> str:
    body = client.get(path).content.decode()
    start = body.find('id="instance-plan"')
    return "" if start < 0 else body[start : body.find("</section>", start)]


def test_the_owner_sees_the_plan_its_price_renewal_and_actions(account, owner):
    server = ServerFactory(account=account, name="Survival SMP")
    price = PriceFactory(product__name="Minecraft 4 GB", unit_amount=899)
    subscription = SubscriptionFactory(account=account, price=price, server=server)
    card = plan_card(signed_in(owner), f"/servers/{server.id}")
    assert "Minecraft 4 GB" in card and "8.99 EUR" in card
    assert 'id="plan-renews"' in card and "Renews" in card
    assert f'href="/billing/subscriptions/{subscription.id}#change-plan"' in card
    assert f'href="/billing/subscriptions/{subscription.id}#cancel"' in card
    # And the subscription leads back to its server.
    page = signed_in(owner).get(f"/billing/subscriptions/{subscription.id}").content.decode()
    assert f'href="/servers/{server.id}"' in page


def test_a_plan_canceled_at_the_period_end_says_when_it_ends(account, owner):
    bot = BotFactory(account=account)
    SubscriptionFactory(account=account, bot=bot, cancel_at_period_end=True)
    card = plan_card(signed_in(owner), f"/bots/{bot.id}")
    assert "Ends" in card and "canceled at the period's end" in card and ">Resume<" in card


def test_a_server_without_a_plan_says_it_runs_on_the_allowance(account, owner):
    server = ServerFactory(account=account)
    card = plan_card(signed_in(owner), f"/servers/{server.id}")
    assert 'id="plan-none"' in card and "allowance" in card


def test_roles_without_billing_see_no_plan_and_billing_may_read_but_not_change(account, owner):
    server = ServerFactory(account=account)
    SubscriptionFactory(account=account, server=server)
    developer = MembershipFactory(account=account, role=Role.DEVELOPER).user
    assert plan_card(signed_in(developer), f"/servers/{server.id}") == ""
    viewer = MembershipFactory(account=account, role=Role.VIEWER).user
    card = plan_card(signed_in(viewer), f"/servers/{server.id}")
    assert "Renews" in card and 'id="plan-change"' not in card


def test_an_outsider_sees_no_page_at_all(account, outsider):
    server = ServerFactory(account=account)
    SubscriptionFactory(account=account, server=server)
    assert signed_in(outsider).get(f"/servers/{server.id}").status_code == 404
