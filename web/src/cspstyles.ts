// xterm.js styles its rows with <style> elements it writes at run time (cell sizes, theme
// colours). The server sends the page with `style-src 'self'` (spec/websocket.md, WS.SITE.2),
// under which a browser ignores such elements. A constructable stylesheet is not markup the
// policy governs, so each <style> under `root` is mirrored into one, kept in step as xterm
// rewrites it. Without the policy the rules apply twice, to the same effect.

export function mirrorInlineStyles(root: HTMLElement): void {
  if (!("adoptedStyleSheets" in document) || typeof CSSStyleSheet === "undefined") return;
  const sheets = new Map<HTMLStyleElement, CSSStyleSheet>();
  const sync = () => {
    for (const el of Array.from(root.querySelectorAll("style"))) {
      let sheet = sheets.get(el);
      if (!sheet) {
        sheet = new CSSStyleSheet();
        sheets.set(el, sheet);
      }
      sheet.replaceSync(el.textContent ?? "");
    }
    for (const el of Array.from(sheets.keys())) if (!el.isConnected) sheets.delete(el);
    const own = new Set(sheets.values());
    document.adoptedStyleSheets = [
      ...document.adoptedStyleSheets.filter((s) => !own.has(s) && !mirrored.has(s)),
      ...own,
    ];
    mirrored = own;
  };
  let mirrored = new Set<CSSStyleSheet>();
  new MutationObserver(sync).observe(root, { subtree: true, childList: true, characterData: true });
  sync();
}
