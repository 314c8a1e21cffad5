// Progressive touches only: every page works without this file.
(function () {
  "use strict";
  var gettext = window.gettext || function (s) { return s; };

  // On a phone the main menu folds behind its "Menu" button (the CSS folds it only once this
  // ran, so without JavaScript it stays open).
  var toggle = document.getElementById("menu-toggle");
  var sidebar = toggle && toggle.closest(".sidebar");
  if (sidebar) {
    sidebar.classList.add("menu-folds");
    toggle.hidden = false;
    toggle.addEventListener("click", function () {
      var open = sidebar.classList.toggle("menu-open");
      toggle.setAttribute("aria-expanded", open ? "true" : "false");
    });
  }

  function copyText(text) {
    if (navigator.clipboard && window.isSecureContext) {
      return navigator.clipboard.writeText(text);
    }
    // Older browsers and plain-HTTP pages: copy through a selected, off-screen text area.
    return new Promise(function (resolve, reject) {
      var area = document.createElement("textarea");
      area.value = text;
      area.setAttribute("readonly", "");
      area.style.position = "fixed";
      area.style.left = "-9999px";
      document.body.appendChild(area);
      area.select();
      var copied = document.execCommand("copy");
      document.body.removeChild(area);
      if (copied) {
        resolve();
      } else {
        reject(new Error("copy failed"));
      }
    });
  }

  document.querySelectorAll("[data-copy-target]").forEach(function (button) {
    var target = document.getElementById(button.getAttribute("data-copy-target"));
    if (!target) {
      return;
    }
    button.hidden = false;
    button.addEventListener("click", function () {
      copyText(target.textContent.trim()).then(
        function () {
          button.textContent = gettext("Copied");
        },
        function () {
          button.textContent = gettext("Select and copy by hand");
        }
      );
    });
  });

  // Buttons that cannot be taken back (kill, reinstall) ask first.
  document.addEventListener("submit", function (event) {
    var question = event.target.getAttribute("data-confirm");
    if (question && !window.confirm(question)) {
      event.preventDefault();
    }
  });

  // Webhook event checkboxes: dim the ones a ticked "*" or "server.*" already includes.
  document.querySelectorAll("[data-event-choices]").forEach(function (fieldset) {
    var boxes = Array.prototype.slice.call(fieldset.querySelectorAll("input[type=checkbox]"));
    function markCovered() {
      var wildcards = boxes.filter(function (box) {
        return box.checked && box.hasAttribute("data-covers");
      });
      boxes.forEach(function (box) {
        var covered = wildcards.some(function (wildcard) {
          var pattern = wildcard.value;
          return wildcard !== box && (pattern === "*" || box.value.indexOf(pattern.slice(0, -1)) === 0);
        });
        box.parentNode.classList.toggle("covered", covered);
      });
    }
    fieldset.addEventListener("change", markCovered);
    markCovered();
  });

  // Live statuses: a region marked data-live with data-poll="true" shows something the
  // worker is still changing, so it is fetched again (?partial=live, the same HTML without the
  // page around it) every few seconds and swapped in, until nothing in it is changing any more.
  var POLL_MILLISECONDS = 3000;

  function schedule(region) {
    if (region.getAttribute("data-poll") === "true") {
      window.setTimeout(function () {
        refresh(region);
      }, POLL_MILLISECONDS);
    }
  }

  function refresh(region) {
    var focused = document.activeElement;
    // Not while the tab is hidden, nor under the keyboard focus of someone about to press a button.
    if (document.hidden || (focused && focused !== document.body && region.contains(focused))) {
      schedule(region);
      return;
    }
    var url = new URL(window.location.href);
    url.searchParams.set("partial", "live");
    fetch(url.toString(), { credentials: "same-origin", headers: { Accept: "text/html" } })
      .then(function (response) {
        var gone = region.getAttribute("data-gone-url");
        if (response.status === 404 && gone) {
          window.location.assign(gone); // deleted meanwhile: back to the list
          return null;
        }
        // Signed out (a redirect to the sign-in page) or an error: stop, the page still works.
        return response.ok && !response.redirected ? response.text() : null;
      })
      .then(function (html) {
        if (html === null) {
          return;
        }
        var template = document.createElement("template");
        template.innerHTML = html;
        var fresh = template.content.querySelector("[data-live]");
        if (fresh && region.isConnected) {
          region.replaceWith(fresh);
          schedule(fresh);
        }
      })
      .catch(function () {
        schedule(region); // the network hiccupped: try again later
      });
  }

  document.querySelectorAll("[data-live]").forEach(schedule);
  // status.js saw a status change (from outside this page): the regions catch up at once.
  document.addEventListener("instance-status-change", function () {
    document.querySelectorAll("[data-live]").forEach(refresh);
  });
})();

// The sign-in pages' language picker changes the language as soon as one is chosen.
document.querySelectorAll(".language-picker select").forEach((select) => {
  select.addEventListener("change", () => select.form.submit());
});
