// The console tab: xterm.js (served from static/vendor) on the node agent's WebSocket.
// A console token comes from the dashboard (POST data-token-url); the socket is opened with it
// ({"event": "auth"} first, agent/PROTOCOL.md), renewed before it expires, and reopened with a
// fresh token if the connection drops.
(function () {
  "use strict";

  var section = document.getElementById("console");
  if (!section) { return; }
  var stateBadge = document.getElementById("console-state");
  var message = document.getElementById("console-message");
  var form = document.getElementById("command-form");
  var input = document.getElementById("command-input");
  var history = [];
  var historyAt = 0;
  var socket = null;
  var retries = 0;
  var closedByPage = false;
  var gettext = window.gettext || function (s) { return s; };
  var ngettext = window.ngettext || function (one, many, n) { return n === 1 ? one : many; };
  var interpolate = window.interpolate || function (text, values) {
    return text.replace(/%\((\w+)\)s/g, function (m, key) { return values[key]; });
  };
  var LANGUAGE = document.documentElement.lang || undefined;
  function number(value, digits) {
    try {
      return Number(value).toLocaleString(LANGUAGE, {minimumFractionDigits: digits, maximumFractionDigits: digits});
    } catch (ignored) {
      return Number(value).toFixed(digits);
    }
  }
  // The process's states the agent reports (agent/PROTOCOL.md), as people read them.
  var PROCESS_STATES = {
    offline: gettext("offline"), starting: gettext("starting"), running: gettext("running"),
    stopping: gettext("stopping"), stopped: gettext("stopped"),
  };

  function csrfToken() {
    var match = document.cookie.match(/(?:^|; )csrftoken=([^;]+)/);
    return match ? decodeURIComponent(match[1]) : "";
  }

  function state(text, kind) {
    stateBadge.textContent = text;
    stateBadge.className = "badge" + (kind ? " badge-" + kind : "");
  }

  function say(text) { message.textContent = text || ""; }

  if (typeof window.Terminal !== "function") {
    state(gettext("Unavailable"), "stopped");
    say(gettext("The terminal could not load. Reload the page."));
    return;
  }
  var terminal = new window.Terminal({
    convertEol: true, disableStdin: true, scrollback: 5000, fontSize: 13,
    theme: {background: "#0f172a"},
  });
  var fit = window.FitAddon ? new window.FitAddon.FitAddon() : null;
  if (fit) { terminal.loadAddon(fit); }
  terminal.open(document.getElementById("terminal"));
  if (fit) {
    fit.fit();
    window.addEventListener("resize", function () { fit.fit(); });
  }

  function fetchToken() {
    return fetch(section.dataset.tokenUrl, {
      method: "POST", credentials: "same-origin", headers: {"X-CSRFToken": csrfToken()},
    }).then(function (response) {
      return response.json().then(function (body) {
        if (!response.ok || !body.success) {
          var error = new Error((body.error && body.error.message) || gettext("The console is unavailable."));
          error.permanent = response.status < 500;
          throw error;
        }
        return body.data.console;
      });
    });
  }

  var units = ["B", "KB", "MB", "GB", "TB"];
  function bytes(value) {
    var at = 0;
    while (value >= 1024 && at < units.length - 1) { value /= 1024; at += 1; }
    return number(value, at ? 1 : 0) + " " + units[at];
  }
  function duration(seconds) {
    var d = Math.floor(seconds / 86400), h = Math.floor(seconds % 86400 / 3600);
    var m = Math.floor(seconds % 3600 / 60);
    var minutes = interpolate(gettext("%(m)sm"), {m: m}, true);
    if (d) { return interpolate(gettext("%(d)sd %(h)sh %(m)sm"), {d: d, h: h, m: m}, true); }
    return h ? interpolate(gettext("%(h)sh %(m)sm"), {h: h, m: m}, true) : minutes;
  }
  function showStats(sample) {
    var figures = {
      cpu_percent: sample.cpu_percent == null ? "–" : number(sample.cpu_percent, 1) + " %",
      memory_bytes: sample.memory_bytes == null ? "–" : bytes(sample.memory_bytes),
      disk_bytes: sample.disk_bytes == null ? "–" : bytes(sample.disk_bytes),
      uptime_seconds: sample.uptime_seconds ? duration(sample.uptime_seconds) : "–",
      at: new Date().toLocaleTimeString(LANGUAGE),
    };
    var players = document.querySelector('[data-usage="players"]');
    if (players && sample.responding != null) {  // a game that answers a query (agent/query.py)
      players.textContent = sample.responding === false ? gettext("Not responding")
        : sample.players == null ? "–"
        : sample.max_players == null
          ? interpolate(gettext("%(players)s players"), {players: sample.players}, true)
          : interpolate(gettext("%(players)s / %(max)s players"), {players: sample.players, max: sample.max_players}, true);
    }
    Object.keys(figures).forEach(function (key) {
      var cell = document.querySelector('[data-usage="' + key + '"]');
      if (!cell) { return; }
      if (key === "at") {  // the whole cell: it held "not yet" or the page's own <time>
        var time = document.createElement("time");
        if (sample.at) { time.dateTime = sample.at; }
        time.textContent = figures.at;
        cell.replaceChildren(time);
        return;
      }
      var first = cell.firstChild;
      if (first && first.nodeType === Node.TEXT_NODE) {
        first.textContent = figures[key] + " ";
      } else {
        cell.insertBefore(document.createTextNode(figures[key] + " "), first);
      }
    });
  }

  function send(event, args) {
    if (socket && socket.readyState === WebSocket.OPEN) {
      socket.send(JSON.stringify({event: event, args: args}));
      return true;
    }
    return false;
  }

  function renew() {
    fetchToken().then(function (console) { send("auth", [console.token]); })
      .catch(function (error) { say(error.message); });
  }

  function connect() {
    state(gettext("Connecting…"));
    fetchToken().then(function (console) {
      socket = new WebSocket(console.socket_url);
      socket.addEventListener("open", function () { send("auth", [console.token]); });
      socket.addEventListener("message", function (raw) {
        var frame;
        try { frame = JSON.parse(raw.data); } catch (ignored) { return; }
        var args = frame.args || [];
        switch (frame.event) {
          case "auth success":
            retries = 0;
            state(gettext("Connected"), "running");
            say("");
            input.disabled = false;
            break;
          case "console output":
            args.forEach(function (line) { terminal.writeln(String(line)); });
            break;
          case "status":
            say(args[0] === "running" ? "" : interpolate(gettext("The process is %(state)s."), {state: PROCESS_STATES[args[0]] || args[0]}, true));
            break;
          case "stats":
            if (args[0]) { showStats(args[0]); }
            break;
          case "console throttled":
            terminal.writeln("\x1b[33m[" + interpolate(ngettext("%(n)s line skipped: output too fast", "%(n)s lines skipped: output too fast", Number(args[0])), {n: args[0]}, true) + "]\x1b[0m");
            break;
          case "token expiring":
            renew();
            break;
          case "auth failed":
          case "error":
            say(String(args[0] || gettext("The console refused the request.")));
            break;
        }
      });
      socket.addEventListener("close", function () {
        input.disabled = true;
        if (closedByPage) { return; }
        retries += 1;
        if (retries > 5) {
          state(gettext("Disconnected"), "stopped");
          say(gettext("The console is unreachable. Reload the page to try again."));
          return;
        }
        state(gettext("Reconnecting…"), "starting");
        window.setTimeout(connect, Math.min(1000 * Math.pow(2, retries), 15000));
      });
    }).catch(function (error) {
      state(gettext("Unavailable"), "stopped");
      say(error.message);
      if (!error.permanent && retries < 5) {
        retries += 1;
        window.setTimeout(connect, 3000);
      }
    });
  }

  form.addEventListener("submit", function (event) {
    event.preventDefault();
    var command = input.value;
    if (!command.trim()) { return; }
    if (send("send command", [command])) {
      // Echo what was typed, in its own colour, as a terminal would; control characters are
      // left out so a pasted escape sequence cannot restyle the terminal.
      terminal.writeln("\x1b[36m> " + command.replace(/[\x00-\x1f\x7f]/g, "") + "\x1b[0m");
      history.push(command);
      historyAt = history.length;
      input.value = "";
    } else {
      say(gettext("Not connected: the command was not sent."));
    }
  });
  input.addEventListener("keydown", function (event) {
    if (event.key === "ArrowUp" && historyAt > 0) {
      historyAt -= 1;
      input.value = history[historyAt];
      event.preventDefault();
    } else if (event.key === "ArrowDown" && historyAt < history.length) {
      historyAt += 1;
      input.value = history[historyAt] || "";
      event.preventDefault();
    }
  });
  window.addEventListener("beforeunload", function () {
    closedByPage = true;
    if (socket) { socket.close(); }
  });
  input.disabled = true;
  connect();
})();
