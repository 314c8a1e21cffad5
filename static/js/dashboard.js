// Progressive touches only: every page works without this file.
(function () {
  "use strict";

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
          button.textContent = "Copied";
        },
        function () {
          button.textContent = "Select and copy by hand";
        }
      );
    });
  });
})();
