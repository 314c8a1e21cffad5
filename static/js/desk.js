// The desk's reply form: picking a macro fills the text and pre-selects its status at once.
// Without this file the "Insert macro" button does the same through the server.
(function () {
  "use strict";

  var texts = document.getElementById("desk-macros");
  var form = document.getElementById("reply-form");
  if (!texts || !form) {
    return;
  }
  var macros = JSON.parse(texts.textContent);
  var picker = form.querySelector("select[name=macro]");
  var body = form.querySelector("textarea[name=body]");
  var status = form.querySelector("select[name=set_status]");
  var insert = form.querySelector("[data-macro-insert]");
  if (insert) {
    insert.hidden = true;
  }
  picker.addEventListener("change", function () {
    var macro = macros[picker.value];
    if (!macro) {
      return;
    }
    var typed = body.value.replace(/\s+$/, "");
    body.value = typed ? typed + "\n\n" + macro.body : macro.body;
    if (macro.set_status && status) {
      status.value = macro.set_status;
    }
    body.focus();
  });
})();
