// Live pages, as a progressive enhancement: every page works without this script.
//
// A page whose <body> names a stream (data-live-url) listens to it with EventSource. When the
// server says runs changed, the page fetches itself again and swaps in the regions marked
// data-live (matched by id), keeping open <details> open and leaving alone a region where the
// reader is typing. One refresh runs at a time; changes that arrive meanwhile cause one more.
(function () {
  "use strict";

  var url = document.body.getAttribute("data-live-url");
  if (!url || !window.EventSource || !window.fetch || !window.DOMParser) {
    return;
  }
  var busy = false;
  var again = false;

  function typingIn(region) {
    var active = document.activeElement;
    if (!active || !region.contains(active)) {
      return false;
    }
    return active.tagName === "TEXTAREA" || active.tagName === "INPUT";
  }

  function swap(fresh) {
    document.querySelectorAll("[data-live]").forEach(function (region) {
      var next = fresh.getElementById(region.id);
      if (!next || typingIn(region)) {
        return;
      }
      region.querySelectorAll("details[open][id]").forEach(function (open) {
        var twin = next.querySelector("#" + CSS.escape(open.id));
        if (twin) {
          twin.setAttribute("open", "");
        }
      });
      region.replaceWith(document.importNode(next, true));
    });
    if (fresh.title) {
      document.title = fresh.title;
    }
  }

  function refresh() {
    if (busy) {
      again = true;
      return;
    }
    busy = true;
    fetch(window.location.href, {credentials: "same-origin", headers: {"Accept": "text/html"}})
      .then(function (response) {
        if (!response.ok) {
          throw new Error("refresh answered " + response.status);
        }
        return response.text();
      })
      .then(function (html) {
        swap(new DOMParser().parseFromString(html, "text/html"));
        document.body.setAttribute("data-refreshed", String(Date.now()));
      })
      .catch(function () { /* the next change tries again */ })
      .then(function () {
        busy = false;
        if (again) {
          again = false;
          refresh();
        }
      });
  }

  var source = new EventSource(url);
  source.addEventListener("open", function () {
    document.body.classList.add("is-live");
    refresh(); // whatever changed between this page's rendering and the stream's start
  });
  source.addEventListener("error", function () {
    document.body.classList.remove("is-live");
  });
  source.addEventListener("change", refresh);
})();
