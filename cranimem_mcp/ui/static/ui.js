// cranimem inspector: the forget / restore / purge buttons. Each asks for confirmation, then
// POSTs JSON to /ui/api/<action> (same origin: the server checks Origin) and reloads the page.
"use strict";

const QUESTIONS = {
  forget: "Forget this memory? It goes to the trash; Restore brings it back.",
  restore: "Restore this memory from the trash?",
  purge: "Purge this memory? It is erased from disk for good and cannot be restored.",
};

document.addEventListener("click", async (event) => {
  const button = event.target.closest("button.act");
  if (!button) return;
  const { action, id, scope } = button.dataset;
  if (!window.confirm(QUESTIONS[action])) return;
  const status = document.getElementById("status");
  button.disabled = true;
  try {
    const response = await fetch("/ui/api/" + action, {
      method: "POST",
      credentials: "same-origin",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ ids: [id], scope }),
    });
    const data = await response.json();
    if (!response.ok) throw new Error(data.error || response.statusText);
    const n = action === "restore" ? data.restored : data.forgotten;
    sessionStorage.setItem("cranimem-status", `${action}: ${n} memory (${id})`);
    window.location.reload();
  } catch (err) {
    if (status) status.textContent = `${action} failed: ${err.message}`;
    button.disabled = false;
  }
});

document.addEventListener("DOMContentLoaded", () => {
  const note = sessionStorage.getItem("cranimem-status");
  const status = document.getElementById("status");
  if (note && status) status.textContent = note;
  sessionStorage.removeItem("cranimem-status");
});
