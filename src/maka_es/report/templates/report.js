"use strict";
// Lane filters and "expand all" for each timeline; the page works without it.
document.querySelectorAll(".lane-toggles").forEach(function (bar) {
  var timeline = document.getElementById(bar.dataset.run + "-timeline");
  if (!timeline) { return; }
  bar.querySelectorAll("input[data-lane]").forEach(function (box) {
    box.addEventListener("change", function () {
      timeline.classList.toggle("hide-" + box.dataset.lane, !box.checked);
    });
  });
  var button = bar.querySelector(".expand-all");
  button.addEventListener("click", function () {
    var all = timeline.querySelectorAll("details");
    var open = !Array.prototype.every.call(all, function (d) { return d.open; });
    all.forEach(function (d) { d.open = open; });
    button.textContent = open ? "collapse all" : "expand all";
  });
});
