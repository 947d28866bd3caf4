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

  // Operator page: refresh the live actor view every 5 s by fetching this same page and
  // swapping the region in. Paused while the tab is hidden or the operator is selecting text
  // (copying an account id or an error); without this script the "Refresh" link does it.
  var live = document.getElementById("op-live");
  if (live && window.fetch && window.DOMParser) {
    document.querySelectorAll(".op-auto").forEach(function (note) {
      note.hidden = false;
    });
    var busy = false;
    window.setInterval(function () {
      var selection = window.getSelection ? String(window.getSelection()) : "";
      if (busy || document.hidden || selection !== "") {
        return;
      }
      busy = true;
      fetch(live.getAttribute("data-refresh"), {
        credentials: "same-origin",
        headers: { Accept: "text/html" }
      })
        .then(function (response) {
          return response.ok ? response.text() : null;
        })
        .then(function (html) {
          if (html === null) {
            return;
          }
          var fresh = new DOMParser().parseFromString(html, "text/html").getElementById("op-live");
          if (fresh) {
            live.innerHTML = fresh.innerHTML;
          }
        })
        .catch(function () {})
        .then(function () {
          busy = false;
        });
    }, 5000);
  }
});
