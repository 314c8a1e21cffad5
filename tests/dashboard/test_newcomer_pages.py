"""What a newcomer meets besides the pages themselves: error pages, the icon, admin, staff."""

import pytest
from django.test import Client, RequestFactory
from django.views.defaults import server_error

from accounts.models import Account
from accounts.services import account_create
from hosting.text import full_stop
from tests.dashboard import signed_in
from tests.factories import ServerFactory, UserFactory

pytestmark = pytest.mark.django_db


# --- Error pages ------------------------------------------------------------------------------


def test_a_post_only_address_opened_in_the_browser_answers_the_products_405_page(owner, account):
    server = ServerFactory(account=account)

    response = signed_in(owner).get(f"/servers/{server.id}/actions")

    assert response.status_code == 405
    assert response["Allow"] == "POST"
    body = response.content.decode()
    assert "<h1>Not available this way</h1>" in body
    assert 'href="/"' in body


def test_the_sign_out_address_opened_directly_answers_the_405_page_too():
    response = Client().get("/logout")

    assert response.status_code == 405
    assert "Not available this way" in response.content.decode()


def test_the_api_keeps_its_own_405_envelope(owner_api):
    response = owner_api.put("/v1/servers", {}, format="json")

    assert response.status_code == 405
    assert response.json()["error"]["code"] == "method_not_allowed"


def test_the_500_page_is_the_products_own_and_needs_no_context():
    response = server_error(RequestFactory().get("/"))

    assert response.status_code == 500
    body = response.content.decode()
    assert "<h1>Something went wrong</h1>" in body
    assert "/static/css/dashboard.css" in body


def test_an_unknown_address_answers_the_products_404_page(owner):
    response = signed_in(owner).get("/no-such-page")

    assert response.status_code == 404
    assert "<h1>Not found</h1>" in response.content.decode()


# --- Icon, admin ------------------------------------------------------------------------------


def test_pages_name_an_icon_and_favicon_ico_leads_to_it(owner):
    body = signed_in(owner).get("/").content.decode()
    assert '<link rel="icon" href="/static/img/favicon.svg" type="image/svg+xml">' in body

    response = Client().get("/favicon.ico")

    assert response.status_code == 302
    assert response["Location"] == "/static/img/favicon.svg"


def test_admin_carries_the_products_name_and_plural_names_are_english(db):
    staff = UserFactory(is_staff=True, is_superuser=True)

    body = signed_in(staff).get("/admin/").content.decode()

    assert "Django administration" not in body
    assert "Hosting Management · Staff" in body
    assert "Webhook deliveries" in body
    assert "deliverys" not in body


# --- Staff without an account -----------------------------------------------------------------


def test_staff_without_an_account_get_admin_and_no_customer_menus(db):
    staff = UserFactory(is_staff=True)

    answer = signed_in(staff).get("/", follow=True)
    assert answer.redirect_chain == [("/staff", 302)]  # their own home, the staff home
    body = answer.content.decode()

    assert 'id="nav-admin" href="/admin/"' in body
    assert 'id="staff-admin"' in body
    for customer_page in ('href="/bots"', 'href="/settings/api-keys"', 'href="/team"'):
        assert customer_page not in body
    assert 'href="/settings/profile"' in body


def test_customers_see_their_menus_and_no_admin_link(owner):
    body = signed_in(owner).get("/").content.decode()

    assert 'href="/bots"' in body
    assert "/admin/" not in body


def test_staff_members_of_an_account_see_both(owner, account):
    owner.is_staff = True
    owner.save(update_fields=["is_staff"])

    body = signed_in(owner).get("/").content.decode()

    assert 'href="/bots"' in body
    assert 'id="nav-admin" href="/admin/"' in body


# --- Sentences ending with a name ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "sentence_end"),
    [("Demo Hosting Co.", "Demo Hosting Co."), ("Acme", "Acme."), ("Yes!", "Yes!")],
)
def test_a_name_ending_a_sentence_gets_one_full_stop(name, sentence_end):
    assert full_stop(name) == sentence_end


def test_the_servers_page_of_an_account_whose_name_ends_in_a_full_stop(db):
    account = account_create(
        name="Demo Hosting Co.", owner_email="demo@example.com", owner_password="x-Long-pass-99"
    )
    owner = Account.objects.get(pk=account.pk).memberships.get().user

    body = signed_in(owner).get("/").content.decode()

    assert "The game servers of Demo Hosting Co.<" in body
    assert "Co.." not in body


def test_the_api_keys_table_labels_every_cell_for_narrow_screens(owner, account, make_token):
    make_token(owner, account)

    body = signed_in(owner).get("/settings/api-keys").content.decode()

    assert 'class="table table-stack"' in body
    for label in ("Name", "Key", "Scopes", "Created by", "Created", "Last used", "Expires"):
        assert f'data-label="{label}"' in body
    assert 'class="status-cell" data-label="Status"' in body
