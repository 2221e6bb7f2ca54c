// driftgate console: the few enhancements a page works without (copy buttons).
document.addEventListener("click", (event) => {
  const button = event.target.closest("button.copy");
  if (!button) return;
  const source = document.getElementById(button.dataset.copy);
  if (!source || !navigator.clipboard) return;
  navigator.clipboard.writeText(source.textContent.trim()).then(() => {
    button.textContent = "Copied";
  });
});

// Live parts fail closed: when a poll gets no answer (the server is down) or an error (signed
// out, a 5xx), the part says it is unavailable and the heading's status turns to "unknown"
// rather than showing an old state. The part keeps polling and is replaced when it answers.
function markUnavailable(element, why) {
  if (element.classList.contains("live")) {
    element.classList.add("unavailable");
    element.dataset.live = "unavailable";
    element.textContent = "";
    const badge = document.createElement("strong");
    badge.className = "status unknown";
    badge.textContent = "unavailable";
    element.append(badge, ` Live status unavailable: ${why} What this page shows may be out of date.`);
    const heading = document.querySelector("h1 > .status");
    if (heading) {
      heading.className = "status unknown";
      heading.textContent = "unknown";
    }
  } else if (element.classList.contains("activity-part")) {
    element.textContent = `Activity unavailable: ${why}`;
  }
}
document.addEventListener("htmx:sendError", (event) => {
  markUnavailable(event.detail.elt, "the server did not answer.");
});
document.addEventListener("htmx:responseError", (event) => {
  const status = event.detail.xhr.status;
  const why = status === 401 ? "you are signed out; sign in again." : `the server answered ${status}.`;
  markUnavailable(event.detail.elt, why);
});
