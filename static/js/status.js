// Live statuses of servers and bots: every page without this file still works (it shows the
// status of when it was loaded).
//
// A status badge marked data-instance-status="<id>" (a server's or bot's page header, the
// rows of the lists) is kept current whatever changes it: the agent reporting a crash, another
// member pressing a button, the billing job suspending. Every few seconds the page asks the
// status endpoint (data-status-url) for its instances with the ETag of its last answer; the
// answer is 304 until something changed. Then the badge, the power buttons (those the status
// now allows, as the server's action table says: the answer names them) and a polite live
// region follow, and the page's refreshing regions (dashboard.js) are asked to catch up.
(function () {
  "use strict";

  var POLL_MILLISECONDS = 4000;
  var gettext = window.gettext || function (s) { return s; };
  var interpolate = window.interpolate || function (text, values) {
    return text.replace(/%\((\w+)\)s/g, function (m, key) { return values[key]; });
  };
  var first = document.querySelector("[data-instance-status][data-status-url]");
  if (!first || !window.fetch) {
    return;
  }
  var url = first.getAttribute("data-status-url");
  var etag = null;
  var timer = null;
  var known = {}; // id -> the status last shown or announced

  var announcer = document.createElement("div");
  announcer.id = "status-announcer";
  announcer.className = "visually-hidden";
  announcer.setAttribute("role", "status");
  announcer.setAttribute("aria-live", "polite");
  document.body.appendChild(announcer);

  function badges() {
    return Array.prototype.slice.call(document.querySelectorAll("[data-instance-status]"));
  }

  badges().forEach(function (badge) {
    known[badge.getAttribute("data-instance-status")] = badge.getAttribute("data-status");
  });

  function ids() {
    var seen = {};
    return badges()
      .map(function (badge) {
        return badge.getAttribute("data-instance-status");
      })
      .filter(function (id) {
        var fresh = !seen[id];
        seen[id] = true;
        return fresh;
      });
  }

  function showBadge(item) {
    document.querySelectorAll('[data-instance-status="' + item.id + '"]').forEach(function (badge) {
      if (badge.getAttribute("data-status") === item.status) {
        return;
      }
      badge.classList.remove("badge-" + badge.getAttribute("data-status"));
      badge.classList.add("badge-" + item.status);
      badge.setAttribute("data-status", item.status);
      badge.textContent = item.status_label;
    });
  }

  function showButtons(item) {
    document.querySelectorAll('[data-power-actions="' + item.id + '"]').forEach(function (row) {
      var focused = document.activeElement;
      var lostFocus = false;
      var shown = [];
      row.querySelectorAll("form[data-action]").forEach(function (form) {
        var allowed = item.actions.indexOf(form.getAttribute("data-action")) !== -1;
        if (!allowed && !form.hidden && form.contains(focused)) {
          lostFocus = true;
        }
        form.hidden = !allowed;
        if (allowed) {
          shown.push(form);
        }
      });
      if (lostFocus && shown.length) {
        shown[0].querySelector("button").focus(); // not back to the top of the page
      }
    });
  }

  function sentence(item) {
    var text = interpolate(gettext("\u201c%(name)s\u201d is now %(status)s."), {name: item.name, status: item.status_label}, true);
    if (item.status_reason && item.status !== "running") {
      text += " " + item.status_reason;
    }
    return text;
  }

  function apply(instances) {
    var news = [];
    instances.forEach(function (item) {
      if (known[item.id] !== undefined && known[item.id] !== item.status) {
        news.push(sentence(item));
      }
      known[item.id] = item.status;
      showBadge(item);
      showButtons(item);
    });
    if (news.length) {
      announcer.textContent = news.join(" ");
      document.dispatchEvent(new CustomEvent("instance-status-change"));
    }
  }

  function schedule(delay) {
    window.clearTimeout(timer);
    timer = window.setTimeout(poll, delay === undefined ? POLL_MILLISECONDS : delay);
  }

  function poll() {
    if (document.hidden) {
      return; // asked again when the tab is shown
    }
    var wanted = ids();
    if (!wanted.length) {
      schedule();
      return;
    }
    var query = new URLSearchParams();
    wanted.forEach(function (id) {
      query.append("id", id);
    });
    var headers = { Accept: "application/json" };
    if (etag) {
      headers["If-None-Match"] = etag;
    }
    fetch(url + "?" + query.toString(), {
      credentials: "same-origin",
      cache: "no-store", // the ETag is this script's to send, not the browser cache's to answer
      headers: headers,
    })
      .then(function (response) {
        if (response.status === 304) {
          schedule();
          return null;
        }
        if (response.status === 404) {
          // One of them was deleted (or its access withdrawn) meanwhile.
          var gone = first.getAttribute("data-gone-url");
          if (first.id === "status" && gone) {
            window.location.assign(gone);
            return null;
          }
          etag = null;
          document.dispatchEvent(new CustomEvent("instance-status-change"));
          schedule();
          return null;
        }
        // Signed out (a redirect to the sign-in page) or a server error: stop, the page still works.
        if (!response.ok || response.redirected) {
          return null;
        }
        etag = response.headers.get("ETag");
        return response.json().then(function (body) {
          apply(body.data.servers || body.data.bots || []);
          schedule();
        });
      })
      .catch(function () {
        schedule(); // the network hiccupped: try again later
      });
  }

  document.addEventListener("visibilitychange", function () {
    if (!document.hidden) {
      schedule(0);
    }
  });
  schedule();
})();
