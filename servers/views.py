"""Dashboard pages for servers."""

from django.views.generic import ListView

from accounts.views import AccountPageMixin
from servers.selectors import servers_of_account


class ServerListView(AccountPageMixin, ListView):
    """The home page: the current account's servers, newest first."""

    template_name = "dashboard/home.html"
    context_object_name = "servers"
    paginate_by = 25

    def get_queryset(self):
        return servers_of_account(account_id=self.account.id).select_related("game")
