// New API key: choosing a preset ticks its scopes (every scope of its actions the person may
// grant, as the server applies it), and ticking a scope by hand makes the choice "Custom".
(function () {
  "use strict";
  var groups = document.querySelector("[data-scope-presets]");
  var preset = document.querySelector("select[name=preset]");
  if (!groups || !preset) {
    return;
  }
  var presets = JSON.parse(groups.getAttribute("data-scope-presets"));
  var boxes = groups.querySelectorAll("input[type=checkbox][name=scopes]");

  preset.addEventListener("change", function () {
    var actions = presets[preset.value];
    if (!actions) {
      return; // "Custom": the ticks stay as they are
    }
    boxes.forEach(function (box) {
      if (!box.disabled) {
        box.checked = actions.indexOf(box.getAttribute("data-action")) !== -1;
      }
    });
  });
  boxes.forEach(function (box) {
    box.addEventListener("change", function () {
      preset.value = "";
    });
  });
})();
