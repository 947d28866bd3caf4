// The dashboard's only script: a progressive enhancement. Without it, every page reads and
// every form works; the new API key sits in a readonly field the user can select and copy, and
// Compose's upload form posts its files to the page's own upload route.
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

  var upload = document.getElementById("c-upload");
  if (upload && window.XMLHttpRequest && window.FormData) {
    picker(upload);
  }
});

// Compose page: each file picked in the upload form or dropped on its drop zone is sent to the
// media API at once, shows its progress, then a thumbnail and a Remove button. Its URL goes into
// the media field, in the order the files were picked, so the compose form publishes it as it
// would a typed URL; Remove takes it out again (the file stays in the user's library). The
// page's strings come in the form's data-* attributes, in the page's language.
function picker(form) {
  var field = document.getElementById(form.getAttribute("data-media-field"));
  var input = form.querySelector("input[type=file]");
  var list = form.querySelector(".uploads");
  var drop = form.querySelector(".drop-zone");
  var publish = field && field.form ? field.form.querySelector("button[type=submit]") : null;
  if (!field || !input || !list || !drop) {
    return;
  }
  var say = function (name, values) {
    var text = form.getAttribute("data-" + name) || "";
    Object.keys(values || {}).forEach(function (key) {
      text = text.split("{" + key + "}").join(values[key]);
    });
    return text;
  };
  var element = function (tag, className) {
    var made = document.createElement(tag);
    if (className) {
      made.className = className;
    }
    return made;
  };
  // Every file picked and not removed, in the order picked; `url` once stored.
  var entries = [];
  var pending = 0;

  var lines = function () {
    return field.value.split(/\r?\n/).filter(function (line) {
      return line.trim() !== "";
    });
  };
  var setLines = function (next) {
    field.value = next.join("\n");
  };
  // Before the URL of the nearest later file already in the field, else at the end: the files'
  // URLs keep the order they were picked in, whichever upload ends first, and lines the user
  // typed stay where they are.
  var place = function (entry) {
    var current = lines();
    var at = -1;
    for (var k = entries.indexOf(entry) + 1; k < entries.length && at < 0; k++) {
      if (entries[k].url) {
        at = current.indexOf(entries[k].url);
      }
    }
    if (at < 0) {
      current.push(entry.url);
    } else {
      current.splice(at, 0, entry.url);
    }
    setLines(current);
  };
  var takeOut = function (url) {
    var current = lines();
    var at = current.indexOf(url);
    if (at >= 0) {
      current.splice(at, 1);
      setLines(current);
    }
  };
  // Publishing before an upload has ended would leave its file out of the post.
  var settle = function (change) {
    pending += change;
    if (publish) {
      publish.disabled = pending > 0;
    }
  };

  var add = function (file) {
    var entry = { url: null, busy: true, xhr: new XMLHttpRequest() };
    var item = element("li", "upload-item");
    var name = element("span", "upload-name");
    name.textContent = file.name;
    var progress = element("progress");
    progress.max = 100;
    progress.value = 0;
    progress.setAttribute("aria-label", file.name);
    // The list is a live region: it announces each file's outcome, not every percent (the
    // progress bar carries those).
    var status = element("p", "upload-status");
    var percent = element("span");
    percent.setAttribute("aria-hidden", "true");
    percent.textContent = say("uploading", { percent: "0" });
    status.appendChild(percent);
    var remove = element("button", "upload-remove");
    remove.type = "button";
    remove.textContent = say("remove");
    remove.setAttribute("aria-label", say("remove-named", { name: file.name }));
    [name, progress, remove, status].forEach(function (part) {
      item.appendChild(part);
    });
    list.appendChild(item);
    list.hidden = false;
    entries.push(entry);
    settle(1);

    var finish = function () {
      if (entry.busy) {
        entry.busy = false;
        settle(-1);
      }
      if (progress.parentNode) {
        item.removeChild(progress);
      }
    };
    var stored = function (media) {
      finish();
      entry.url = media.url;
      place(entry);
      var video = /^video\//.test(media.content_type || "");
      var thumb = element(video ? "video" : "img", "upload-thumb");
      if (video) {
        thumb.muted = true;
        thumb.preload = "metadata";
        thumb.setAttribute("aria-label", file.name);
      } else {
        thumb.alt = file.name;
      }
      thumb.src = media.url;
      item.insertBefore(thumb, item.firstChild);
      item.classList.add("stored");
      status.textContent = say("uploaded");
    };
    var refused = function (answer) {
      finish();
      item.classList.add("failed");
      status.className = "upload-status field-error";
      status.textContent = say("failed") + ": ";
      if (answer) {
        var code = element("code");
        code.textContent = answer.error;
        status.appendChild(code);
        status.appendChild(document.createTextNode(" " + answer.message));
      } else {
        status.appendChild(document.createTextNode(say("lost")));
      }
    };

    remove.addEventListener("click", function () {
      entry.xhr.abort();
      finish();
      if (entry.url) {
        takeOut(entry.url);
      }
      entries.splice(entries.indexOf(entry), 1);
      list.removeChild(item);
      list.hidden = entries.length === 0;
      input.focus();
    });

    var xhr = entry.xhr;
    xhr.upload.addEventListener("progress", function (event) {
      if (event.lengthComputable && event.total > 0) {
        var done = Math.floor((event.loaded * 100) / event.total);
        progress.value = done;
        percent.textContent = say("uploading", { percent: String(done) });
      }
    });
    xhr.addEventListener("load", function () {
      var answer = null;
      try {
        answer = JSON.parse(xhr.responseText);
      } catch (ignored) {
        answer = null;
      }
      if (xhr.status === 201 && answer && answer.media && answer.media.url) {
        stored(answer.media);
      } else {
        refused(answer && answer.message ? answer : null);
      }
    });
    xhr.addEventListener("error", function () {
      refused(null);
    });
    // Same origin: the session cookie goes along (credentials "same-origin"), and so do the
    // browser's Origin and Sec-Fetch-Site, which the API checks on a session's writes.
    xhr.open("POST", form.getAttribute("data-upload-api"));
    xhr.setRequestHeader("Accept", "application/json");
    var body = new FormData();
    body.append("file", file, file.name);
    xhr.send(body);
  };
  var addAll = function (files) {
    for (var i = 0; i < files.length; i++) {
      add(files[i]);
    }
  };

  // The form itself is never sent now: files go as they are picked.
  form.addEventListener("submit", function (event) {
    event.preventDefault();
  });
  input.required = false;
  form.querySelectorAll("button[type=submit]").forEach(function (button) {
    button.hidden = true;
  });
  input.addEventListener("change", function () {
    addAll(input.files);
    // The same file can be picked again.
    input.value = "";
  });
  drop.hidden = false;
  ["dragenter", "dragover"].forEach(function (type) {
    drop.addEventListener(type, function (event) {
      event.preventDefault();
      drop.classList.add("over");
    });
  });
  drop.addEventListener("dragleave", function () {
    drop.classList.remove("over");
  });
  drop.addEventListener("drop", function (event) {
    event.preventDefault();
    drop.classList.remove("over");
    if (event.dataTransfer) {
      addAll(event.dataTransfer.files);
    }
  });
}
