// Per-chart CSV export of exactly the values the chart was given.
export function toCsv(header: string[], columns: ArrayLike<unknown>[]): string {
  const n = columns[0]?.length ?? 0;
  const esc = (v: unknown) => {
    // A gap: null in a JSON answer, a non-finite value in a columnar frame's views.
    if (v === null || v === undefined || (typeof v === 'number' && !Number.isFinite(v))) return '';
    const s = String(v);
    return /[",\n]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
  };
  const lines = [header.map(esc).join(',')];
  for (let i = 0; i < n; i++) lines.push(columns.map((c) => esc(c[i])).join(','));
  return `${lines.join('\n')}\n`;
}

export function downloadText(name: string, text: string, type = 'text/csv'): void {
  const url = URL.createObjectURL(new Blob([text], { type }));
  const a = document.createElement('a');
  a.href = url;
  a.download = name;
  document.body.appendChild(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 1000);
}
