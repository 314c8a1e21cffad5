// The Files tab (servers/views/files.py): new folders and files, rename, delete, uploads with a
// progress bar straight to the node (restartable: after a broken connection the upload asks
// the node how much it holds and sends the rest), and the editor (CodeMirror, saved with the
// version it was read at, so a change someone made meanwhile is never overwritten unasked).
(function () {
  "use strict";
  var gettext = window.gettext || function (s) { return s; };
  var ngettext = window.ngettext || function (one, many, n) { return n === 1 ? one : many; };
  var interpolate = window.interpolate || function (text, values) {
    return text.replace(/%\((\w+)\)s/g, function (m, key) { return values[key]; });
  };

  function csrfToken() {
    var match = document.cookie.match(/(?:^|; )csrftoken=([^;]+)/);
    return match ? decodeURIComponent(match[1]) : "";
  }

  // One JSON call of the page's view: resolves with data, rejects with the error object.
  function call(url, body) {
    return fetch(url, {
      method: "POST",
      credentials: "same-origin",
      headers: {"Content-Type": "application/json", "X-CSRFToken": csrfToken()},
      body: JSON.stringify(body),
    }).then(function (response) {
      return response.json().catch(function () {
        return {success: false, error: {code: "internal_error", message: gettext("The answer was not understood.")}};
      }).then(function (answer) {
        if (!answer.success) {
          answer.error.status = response.status;
          throw answer.error;
        }
        return answer.data;
      });
    });
  }

  function join(folder, name) {
    return (folder === "/" ? "" : folder) + "/" + name;
  }

  // --- The folder page ---------------------------------------------------------------------

  function folderPage(root) {
    var doUrl = root.dataset.doUrl, folder = root.dataset.path;
    var message = document.getElementById("files-message");
    var say = function (text) { message.textContent = text; };
    var fail = function (error) { say(error.message || gettext("That did not work.")); };
    var reload = function () { window.location.reload(); };
    var boxes = Array.prototype.slice.call(root.querySelectorAll(".file-select"));
    var selected = function () {
      return boxes.filter(function (box) { return box.checked; }).map(function (box) { return box.value; });
    };
    var renameButton = document.getElementById("files-rename");
    var deleteButton = document.getElementById("files-delete");
    function selectionChanged() {
      var count = selected().length;
      if (renameButton) renameButton.disabled = count !== 1;
      if (deleteButton) {
        deleteButton.disabled = count === 0;
        deleteButton.textContent = count > 1 ? interpolate(gettext("Delete %(count)s"), {count: count}, true) : gettext("Delete");
      }
    }
    boxes.forEach(function (box) { box.addEventListener("change", selectionChanged); });
    // Boxes ticked before this script ran (it is deferred), or restored by the browser on
    // going back, count from the start.
    selectionChanged();
    var all = document.getElementById("files-all");
    if (all) {
      all.addEventListener("change", function () {
        boxes.forEach(function (box) { box.checked = all.checked; });
        selectionChanged();
      });
    }
    var on = function (id, handler) {
      var element = document.getElementById(id);
      if (element) element.addEventListener("click", handler);
    };
    on("files-new-folder", function () {
      var name = window.prompt(gettext("Name of the new folder"));
      if (name) call(doUrl, {op: "folder", path: join(folder, name)}).then(reload, fail);
    });
    on("files-new-file", function () {
      var name = window.prompt(gettext("Name of the new file"));
      if (!name) return;
      var path = join(folder, name);
      call(doUrl, {op: "write", path: path, content: ""}).then(function () {
        window.location.href = root.dataset.editUrl + "?path=" + encodeURIComponent(path);
      }, fail);
    });
    on("files-rename", function () {
      var from = selected()[0];
      var name = window.prompt(gettext("New name (or a path such as /plugins/old.jar)"), from.split("/").pop());
      if (!name) return;
      var to = name.charAt(0) === "/" ? name : join(folder, name);
      call(doUrl, {op: "rename", from: from, to: to}).then(reload, fail);
    });
    on("files-delete", function () {
      var paths = selected();
      var question = paths.length === 1
        ? interpolate(gettext("Delete %(path)s? Folders go with everything in them. This cannot be undone."), {path: paths[0]}, true)
        : interpolate(ngettext(
          "Delete %(count)s file or folder? Folders go with everything in them. This cannot be undone.",
          "Delete %(count)s files and folders? Folders go with everything in them. This cannot be undone.",
          paths.length), {count: paths.length}, true);
      if (!window.confirm(question)) return;
      call(doUrl, {op: "delete", paths: paths}).then(reload, fail);
    });

    // Uploads: each file to the signed address the page asks for, with its own progress bar.
    var list = document.getElementById("files-uploads");
    function upload(file) {
      var item = document.createElement("li");
      var label = document.createElement("span");
      var bar = document.createElement("progress");
      label.textContent = file.name + " ";
      bar.max = file.size || 1;
      bar.value = 0;
      item.appendChild(label);
      item.appendChild(bar);
      list.appendChild(item);
      var path = join(folder, file.name);
      return call(doUrl, {op: "upload_url", path: path}).then(function (transfer) {
        return send(transfer.url, file, 0, bar, 3);
      }).then(function () {
        label.textContent = interpolate(gettext("%(name)s uploaded"), {name: file.name}, true) + " ";
        bar.value = bar.max;
      }, function (error) {
        label.textContent = file.name + ": " + (error.message || gettext("the upload failed")) + " ";
        item.classList.add("error");
        throw error;
      });
    }
    // PUT the file from `offset` on; after a broken connection, ask the node how much it holds
    // (HEAD: Upload-Offset) and send the rest, `retries` times at most.
    function send(url, file, offset, bar, retries) {
      return new Promise(function (resolve, reject) {
        var request = new XMLHttpRequest();
        request.open("PUT", url);
        if (offset > 0 || file.size > 0) {
          request.setRequestHeader("Content-Range", "bytes " + offset + "-" + Math.max(offset, file.size - 1) + "/" + file.size);
        }
        request.upload.onprogress = function (event) { bar.value = offset + event.loaded; };
        request.onload = function () {
          if (request.status === 200 || request.status === 201) return resolve();
          var answer = {};
          try { answer = JSON.parse(request.responseText); } catch (ignored) { /* not JSON */ }
          reject((answer && answer.error) || {message: interpolate(gettext("The node answered %(status)s."), {status: request.status}, true)});
        };
        request.onerror = function () {
          if (retries <= 0) return reject({message: gettext("The connection to the node broke.")});
          fetch(url, {method: "HEAD"}).then(function (response) {
            var held = parseInt(response.headers.get("Upload-Offset") || "0", 10);
            resolve(send(url, file, held, bar, retries - 1));
          }, function () { reject({message: gettext("The node cannot be reached.")}); });
        };
        request.send(file.size > 0 ? file.slice(offset) : file);
      });
    }
    function uploadAll(files) {
      var queue = Array.prototype.slice.call(files);
      var failed = false;
      var next = function () {
        if (!queue.length) {
          if (!failed) reload();
          return;
        }
        upload(queue.shift()).catch(function () { failed = true; }).then(next);
      };
      next();
    }
    var picker = document.getElementById("files-upload");
    if (picker) picker.addEventListener("change", function () { uploadAll(picker.files); });
    var drop = document.getElementById("files-drop");
    if (drop) {
      ["dragenter", "dragover"].forEach(function (name) {
        root.addEventListener(name, function (event) {
          event.preventDefault();
          drop.classList.add("active");
        });
      });
      root.addEventListener("dragleave", function () { drop.classList.remove("active"); });
      root.addEventListener("drop", function (event) {
        event.preventDefault();
        drop.classList.remove("active");
        if (event.dataTransfer && event.dataTransfer.files.length) uploadAll(event.dataTransfer.files);
      });
    }
  }

  // --- The editor ----------------------------------------------------------------------------

  function editorPage(root) {
    var doUrl = root.dataset.doUrl, path = root.dataset.path;
    var version = root.dataset.version;
    var textarea = document.getElementById("editor-text");
    var state = document.getElementById("editor-state");
    var conflict = document.getElementById("editor-conflict");
    var view = null;
    if (window.HMSEditor) {
      var languages = window.HMSEditor;
      view = languages.create(root, textarea.value, languages.languageOf(path), function () {
        state.textContent = gettext("Not saved");
      });
      textarea.hidden = true;
      if (root.dataset.canWrite !== "true") view.contentDOM.setAttribute("contenteditable", "false");
    } else {
      textarea.addEventListener("input", function () { state.textContent = gettext("Not saved"); });
    }
    var text = function () { return view ? view.state.doc.toString() : textarea.value; };
    function save(overwrite) {
      var body = {op: "write", path: path, content: text()};
      if (!overwrite) body.version = version;
      state.textContent = gettext("Saving…");
      call(doUrl, body).then(function (written) {
        version = written.version;
        conflict.hidden = true;
        state.textContent = gettext("Saved");
      }, function (error) {
        if (error.code === "version_mismatch") {
          conflict.hidden = false;
          state.textContent = gettext("Not saved");
        } else {
          state.textContent = error.message || gettext("Not saved");
        }
      });
    }
    var saveButton = document.getElementById("editor-save");
    if (saveButton) saveButton.addEventListener("click", function () { save(false); });
    document.getElementById("editor-reload").addEventListener("click", function () { window.location.reload(); });
    document.getElementById("editor-overwrite").addEventListener("click", function () { save(true); });
    document.addEventListener("keydown", function (event) {
      if ((event.ctrlKey || event.metaKey) && event.key === "s" && saveButton) {
        event.preventDefault();
        save(false);
      }
    });
  }

  document.addEventListener("DOMContentLoaded", function () {
    var files = document.getElementById("files");
    if (files) folderPage(files);
    var editor = document.getElementById("editor");
    if (editor) editorPage(editor);
  });
})();
