/**
 * The dashboard's stylesheet, inlined in every page: the CSP allows inline styles and nothing
 * remote, so the page needs no second request and works offline behind any proxy.
 */
export const DASHBOARD_STYLES = `
:root {
  --bg: #f5f6f8; --panel: #fff; --line: #e2e5ea; --text: #1b2230; --muted: #5d6675;
  --blue: #2458d6; --green: #2f9e5b; --amber: #b07a00; --red: #c93838;
  color-scheme: light;
}
* { box-sizing: border-box; }
body {
  margin: 0; background: var(--bg); color: var(--text);
  font: 15px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif;
}
code, pre { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, "Liberation Mono", monospace; font-size: 13px; }
a { color: var(--blue); }
h1, h2 { margin: 0; }
h2 { font-size: 17px; font-weight: 600; }
.wrap { max-width: 1200px; margin: 0 auto; padding: 0 24px; }
.muted { color: var(--muted); }
.small { font-size: 12px; }
.nowrap { white-space: nowrap; }
.visually-hidden { position: absolute; width: 1px; height: 1px; overflow: hidden; clip: rect(0 0 0 0); white-space: nowrap; }
.brand { font-size: 18px; font-weight: 700; letter-spacing: -0.01em; }
.brand span { font-weight: 500; color: var(--muted); }
.topbar { background: var(--panel); border-bottom: 1px solid var(--line); margin-bottom: 24px; }
.topbar-inner { display: flex; align-items: center; justify-content: space-between; gap: 12px; min-height: 60px; padding-top: 10px; padding-bottom: 10px; flex-wrap: wrap; }
.topbar-meta { display: flex; align-items: center; gap: 12px; font-size: 14px; }
.topbar-meta form { margin: 0; }
.btn {
  display: inline-block; font: inherit; font-size: 14px; font-weight: 500; line-height: 20px;
  padding: 6px 14px; border-radius: 6px; border: 1px solid #cfd4dc; background: #fff;
  color: var(--text); text-decoration: none; cursor: pointer;
}
.btn:hover { background: #f0f2f5; }
.btn:focus-visible, input:focus-visible, summary:focus-visible { outline: 3px solid #9bb8f5; outline-offset: 1px; }
.btn-primary { background: var(--blue); border-color: var(--blue); color: #fff; }
.btn-primary:hover { background: #1c47b3; }
.btn-danger { color: var(--red); border-color: #e8b4b4; }
.btn-danger:hover { background: #fdf0f0; }
.btn-small { padding: 3px 10px; font-size: 13px; }
.flash { margin: 0 0 20px; padding: 10px 14px; border-radius: 6px; border: 1px solid; }
.flash-ok { background: #eaf7ef; border-color: #b6e2c6; color: #1d6b3d; }
.flash-warn { background: #fff6e5; border-color: #f0d49b; color: #7a5200; }
.cards { display: grid; grid-template-columns: repeat(auto-fit, minmax(170px, 1fr)); gap: 16px; margin-bottom: 24px; }
.card { background: var(--panel); border: 1px solid var(--line); border-radius: 10px; padding: 16px 18px; border-top: 4px solid #c5cbd5; }
.card[data-state="pending"] { border-top-color: var(--blue); }
.card[data-state="claimed"] { border-top-color: #7c5cd6; }
.card[data-state="delivered"] { border-top-color: var(--green); }
.card[data-state="dead"] { border-top-color: #c5cbd5; }
.card-bad[data-state="dead"] { border-top-color: var(--red); }
.card-bad .card-value { color: var(--red); }
.card-warn { border-top-color: #e0a100; }
.card-warn .card-value { color: var(--amber); }
.card-label { font-size: 13px; font-weight: 600; text-transform: uppercase; letter-spacing: 0.04em; color: var(--muted); }
.card-value { font-size: 34px; font-weight: 650; line-height: 1.2; margin: 4px 0 2px; font-variant-numeric: tabular-nums; }
.card-note { font-size: 13px; color: var(--muted); }
.panel { background: var(--panel); border: 1px solid var(--line); border-radius: 10px; padding: 18px 20px; margin-bottom: 24px; }
.panel-head { display: flex; align-items: center; justify-content: space-between; gap: 12px; flex-wrap: wrap; margin-bottom: 12px; }
.panel-head form { margin: 0; }
.count { display: inline-block; min-width: 24px; padding: 0 8px; margin-left: 6px; border-radius: 999px; background: #eef0f3; font-size: 13px; text-align: center; vertical-align: 2px; }
.legend { display: flex; gap: 16px; margin: 0; padding: 0; list-style: none; font-size: 13px; color: var(--muted); }
.legend li { display: flex; align-items: center; gap: 6px; }
.swatch { width: 12px; height: 12px; border-radius: 3px; display: inline-block; }
.chart { margin: 0; }
.chart svg { display: block; width: 100%; height: auto; }
.chart .grid { stroke: #edf0f3; stroke-width: 1; }
.chart .axis { stroke: #aab1bc; stroke-width: 1; }
.chart .tick { fill: var(--muted); font-size: 12px; font-family: inherit; }
.chart g:hover rect[fill="transparent"] { fill: #f0f3f8; }
.chart figcaption { font-size: 13px; margin-top: 6px; }
.table-wrap { overflow-x: auto; }
table { width: 100%; border-collapse: collapse; font-size: 14px; }
th { text-align: left; font-size: 12px; font-weight: 600; text-transform: uppercase; letter-spacing: 0.04em; color: var(--muted); padding: 8px 10px; border-bottom: 1px solid var(--line); white-space: nowrap; }
td { padding: 10px; border-bottom: 1px solid #eef0f3; vertical-align: top; }
tbody tr:last-child td { border-bottom: none; }
tbody tr:hover { background: #fafbfc; }
.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
.key { font-size: 12px; color: #3b4453; white-space: nowrap; }
.error { max-width: 420px; overflow-wrap: anywhere; color: #3b4453; }
.actions { white-space: nowrap; text-align: right; }
.actions form { display: inline; margin: 0 0 0 6px; }
details { margin-top: 4px; }
summary { cursor: pointer; font-size: 12px; color: var(--muted); }
pre { margin: 6px 0 0; padding: 8px 10px; background: #f6f7f9; border: 1px solid var(--line); border-radius: 6px; max-height: 240px; overflow: auto; white-space: pre-wrap; overflow-wrap: anywhere; font-size: 12px; }
.badge { display: inline-block; padding: 1px 8px; border-radius: 999px; font-size: 12px; font-weight: 600; }
.badge-dead { background: #fdecec; color: #a32626; }
.badge-pending { background: #fff4dc; color: #7a5200; }
.badge-claimed { background: #efeafd; color: #5236a8; }
.badge-delivered { background: #e7f6ed; color: #1d6b3d; }
.empty { margin: 8px 0; color: var(--muted); }
.table-note { font-size: 13px; margin: 12px 0 0; }
.login { min-height: 100vh; display: flex; align-items: center; justify-content: center; padding: 24px; }
.login-card { width: 100%; max-width: 400px; margin: 0; padding: 28px; }
.login-card .brand { margin-bottom: 8px; }
.login-card label { display: block; font-size: 14px; font-weight: 600; margin: 16px 0 6px; }
.login-card input { width: 100%; font: inherit; padding: 8px 10px; border: 1px solid #cfd4dc; border-radius: 6px; }
.login-card .btn { margin-top: 16px; width: 100%; padding: 8px 14px; }
.login-card .flash { margin: 12px 0 0; }
.search { display: flex; gap: 8px; margin: 0; }
.search input { font: inherit; font-size: 14px; padding: 6px 10px; border: 1px solid #cfd4dc; border-radius: 6px; min-width: 240px; }
.filters { display: flex; gap: 12px; align-items: end; flex-wrap: wrap; margin: 0 0 16px; }
.filters label { display: block; font-size: 12px; font-weight: 600; color: var(--muted); margin-bottom: 4px; }
.filters select, .filters input { font: inherit; font-size: 14px; padding: 6px 10px; border: 1px solid #cfd4dc; border-radius: 6px; background: #fff; }
.pager { display: flex; gap: 12px; margin-top: 12px; }
.fields { display: grid; grid-template-columns: max-content 1fr; gap: 8px 20px; margin: 0; }
.fields dt { font-size: 13px; font-weight: 600; color: var(--muted); }
.fields dd { margin: 0; overflow-wrap: anywhere; }
.message-actions { display: flex; gap: 8px; }
.message-actions form { margin: 0; }
pre.whole { max-height: none; }
.brand a, .card-label a { color: inherit; text-decoration: none; }
.list-actions { display: flex; gap: 10px; align-items: center; flex-wrap: wrap; margin-top: 12px; }
.match-actions { display: flex; gap: 10px; align-items: center; flex-wrap: wrap; margin-top: 16px; padding-top: 14px; border-top: 1px solid var(--line); font-size: 14px; }
.match-actions label { display: flex; gap: 6px; align-items: center; }
td.select { width: 28px; }
td.select input, .match-actions input { width: 16px; height: 16px; margin: 3px 0 0; }
.ordering code { font-size: 12px; }
.held { margin-top: 4px; padding: 2px 8px; border-radius: 6px; background: #fff4dc; color: #7a5200; max-width: 260px; }
.held[data-head-state="dead"] { background: #fdecec; color: #a32626; }
.held a { color: inherit; font-weight: 600; }
.actions select { font: inherit; font-size: 13px; padding: 3px 6px; border: 1px solid #cfd4dc; border-radius: 6px; background: #fff; }
td.destination { min-width: 200px; }
td.destination code { overflow-wrap: anywhere; }
`;
