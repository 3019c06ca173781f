/* Tournaments' countdowns (templates/pages/_tournament.html): every `.countdown[data-at]`
 * ticks in whole seconds, formatted by format.js as pages/periods.py's countdown(); at zero
 * it says what changed and offers a reload. Without JavaScript the rendered text stays. */
(function () {
  "use strict";
  var left = window.LeaderboardFormat.countdown;  // static/js/format.js, loaded first
  var boxes = Array.prototype.slice.call(document.querySelectorAll(".countdown[data-at]"));
  function tick() {
    var now = Date.now();
    boxes = boxes.filter(function (box) {
      var ms = Date.parse(box.dataset.at) - now;
      if (ms <= 0) {
        box.textContent = "";
        var a = document.createElement("a");
        a.href = location.pathname + location.search;
        a.textContent = box.dataset.done;
        box.appendChild(a);
        return false;
      }
      var out = box.querySelector(".left");
      if (out) out.textContent = left(ms);
      return true;
    });
    if (boxes.length) setTimeout(tick, 1000 - (Date.now() % 1000) + 5);
  }
  tick();
})();
