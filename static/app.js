// The dashboard's only script: a progressive enhancement. Without it, every page reads and
// every form works; the new API key sits in a readonly field the user can select and copy.
"use strict";
document.addEventListener("DOMContentLoaded", function () {
  document.querySelectorAll("button[data-copy]").forEach(function (button) {
    var field = document.getElementById(button.getAttribute("data-copy"));
    if (!field || !navigator.clipboard) {
      return;
    }
    button.hidden = false;
    button.addEventListener("click", function () {
      field.select();
      navigator.clipboard.writeText(field.value).then(function () {
        button.textContent = button.getAttribute("data-copied");
      });
    });
  });
});
