"""The Databases tab in a real browser, against the real MariaDB: the owner creates a database,
copies the password shown once, connects with it to what the page says and makes a table;
rotates the password through its confirmation (the old one refused, the new one works) and
deletes the database; on a phone nothing scrolls sideways."""

import pymysql
import pytest

from databases.models import DatabaseEngine, ServerDatabase
from databases.services import _short_id
from tests.browser.test_console_flow import PASSWORD, PHONE
from tests.databases.conftest import _drop_everything_of, host_of
from tests.factories import ServerFactory

expect = pytest.importorskip("playwright.sync_api").expect

pytestmark = pytest.mark.django_db(transaction=True, serialized_rollback=True)


@pytest.fixture
def server(account):
    server = ServerFactory(account=account, name="SMP")
    yield server
    _drop_everything_of([_short_id(server)])


def connect(address: str, user: str, password: str, database: str) -> pymysql.Connection:
    host, port = address.rsplit(":", 1)
    return pymysql.connect(
        host=host, port=int(port), user=user, password=password, database=database
    )


def refused(address: str, user: str, password: str, database: str) -> bool:
    try:
        connect(address, user, password, database).close()
    except pymysql.err.OperationalError:
        return True
    return False


def wide_elements(page) -> tuple[int, list[str]]:
    width = page.evaluate("document.documentElement.scrollWidth")
    wide = page.evaluate(
        "[...document.querySelectorAll('body *')]"
        ".filter(e => e.getBoundingClientRect().right > document.documentElement.clientWidth)"
        ".filter(e => !e.parentElement.closest('.table-wrap, .tabs'))"
        ".map(e => e.tagName + '.' + e.className)"
    )
    return width, wide


def test_create_connect_rotate_and_delete_a_database(page, owner, server, screenshot):
    host_of(DatabaseEngine.MARIADB)
    page.goto("/login")
    page.get_by_label("E-mail").fill(owner.email)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in", exact=True).click()
    page.wait_for_url("/")
    page.goto(f"/servers/{server.id}")
    page.get_by_role("navigation", name="Server").get_by_role("link", name="Databases").click()
    page.wait_for_url(f"/servers/{server.id}/databases")
    expect(page.locator("#databases-empty")).to_be_visible()
    expect(page.locator("#database-usage")).to_contain_text("0 of 1 database used")
    page.set_viewport_size(PHONE)  # the create form, open while there is no database
    expect(page.locator("#database-create-form")).to_be_visible()
    assert wide_elements(page) == (PHONE["width"], [])
    screenshot("databases-new-phone")
    page.set_viewport_size({"width": 1280, "height": 900})

    page.locator("#database-name").fill("world")
    page.locator("#database-create").click()
    page.wait_for_url(f"/servers/{server.id}/databases")
    database = ServerDatabase.objects.get()
    row = page.locator(f"#database-{database.id}")
    address = row.locator(".database-address").inner_text().strip()
    user = row.locator(".database-user").inner_text().strip()
    name = row.locator(".database-name").inner_text().strip()
    assert (address, user, name) == ("127.0.0.1:3306", database.username, database.db_name)
    password = page.inner_text("#new-password").strip()
    page.click("#copy-password")
    assert page.evaluate("navigator.clipboard.readText()") == password
    expect(page.locator("#database-limit-reached")).to_be_visible()
    screenshot("databases-created")

    with connect(address, user, password, name) as connection, connection.cursor() as cursor:
        cursor.execute("CREATE TABLE players (id INT PRIMARY KEY, name VARCHAR(16))")
        cursor.execute("INSERT INTO players VALUES (1, 'Steve')")
        connection.commit()

    page.reload()  # shown once: gone after that page
    assert page.locator("#new-password").count() == 0

    page.once("dialog", lambda dialog: dialog.accept())
    row.get_by_role("button", name="Rotate password").click()
    expect(page.locator("#new-password")).to_be_visible()
    rotated = page.inner_text("#new-password").strip()
    assert rotated != password
    assert refused(address, user, password, name)
    with connect(address, user, rotated, name) as connection, connection.cursor() as cursor:
        cursor.execute("SELECT name FROM players")
        assert cursor.fetchall() == (("Steve",),)

    page.set_viewport_size(PHONE)
    assert wide_elements(page) == (PHONE["width"], [])
    screenshot("databases-phone")

    page.once("dialog", lambda dialog: dialog.accept())
    row.get_by_role("button", name="Delete").click()
    expect(page.locator("#databases-empty")).to_be_visible()
    assert not ServerDatabase.objects.exists()
    assert refused(address, user, rotated, name)
    assert wide_elements(page) == (PHONE["width"], [])
