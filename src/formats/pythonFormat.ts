// Python's float formatting (`repr`, `:.Nf`, `:.N%`, `:g`), so messages read exactly as the reference's.

/** `repr(float(x))`: shortest round-trip digits, `.0` on integral values, exponent outside [1e-4, 1e16). */
export function pyRepr(x: number): string {
  if (Number.isNaN(x)) return 'nan';
  if (!Number.isFinite(x)) return x > 0 ? 'inf' : '-inf';
  if (x === 0) return Object.is(x, -0) ? '-0.0' : '0.0';
  const abs = Math.abs(x);
  if (abs >= 1e16 || abs < 1e-4) {
    // JS exponential gives the same shortest digits; Python pads the exponent to two digits.
    const [mant, exp] = x.toExponential().split('e');
    const sign = exp[0] === '-' ? '-' : '+';
    const digits = exp.replace(/^[+-]/, '').padStart(2, '0');
    return `${mant}e${sign}${digits}`;
  }
  const s = String(x);
  return /[.e]/.test(s) ? s : `${s}.0`;
}

/** `format(x, '.{digits}f')`: round half to even on the exact binary value (JS `toFixed` rounds ties up). */
export function pyFixed(x: number, digits: number): string {
  if (Number.isNaN(x)) return 'nan';
  if (!Number.isFinite(x)) return x > 0 ? 'inf' : '-inf';
  const plain = x.toFixed(digits);
  if (Math.abs(x) >= 1e21) return plain;
  const exact = x.toFixed(Math.min(100, digits + 60));
  const cut = exact.length - (Math.min(100, digits + 60) - digits);
  const rest = exact.slice(cut);
  if (!/^50*$/.test(rest)) return plain;
  // An exact tie: keep the truncated value when its last digit is even.
  const truncated = exact.slice(0, digits === 0 ? cut - 1 : cut);
  const lastDigit = Number(truncated.replace(/\D/g, '').slice(-1));
  return lastDigit % 2 === 0 ? (truncated === '-0' ? '-0' : truncated) : plain;
}

/** `format(x, '.{digits}%')`: Python multiplies by 100 in double arithmetic, then formats fixed. */
export function pyPercent(x: number, digits: number): string {
  return `${pyFixed(x * 100, digits)}%`;
}

/** `format(x, 'g')`: 6 significant digits, trailing zeros dropped, exponent outside [1e-4, 1e6). */
export function pyG(x: number): string {
  if (Number.isNaN(x)) return 'nan';
  if (!Number.isFinite(x)) return x > 0 ? 'inf' : '-inf';
  if (x === 0) return Object.is(x, -0) ? '-0' : '0';
  const precision = 6;
  const [mant, expStr] = x.toExponential(precision - 1).split('e');
  const exp = Number(expStr);
  if (exp < -4 || exp >= precision) {
    const m = mant.includes('.') ? mant.replace(/\.?0+$/, '') : mant;
    const sign = exp < 0 ? '-' : '+';
    return `${m}e${sign}${String(Math.abs(exp)).padStart(2, '0')}`;
  }
  const fixed = pyFixed(x, Math.max(0, precision - 1 - exp));
  return fixed.includes('.') ? fixed.replace(/\.?0+$/, '') : fixed;
}

/** Python's `repr(str)` for short strings, as the reference quotes bad values in its messages. */
export function pyStrRepr(s: string): string {
  const q = s.includes("'") && !s.includes('"') ? '"' : "'";
  let out = '';
  for (const ch of s) {
    if (ch === '\\') out += '\\\\';
    else if (ch === q) out += `\\${q}`;
    else if (ch === '\n') out += '\\n';
    else if (ch === '\t') out += '\\t';
    else if (ch === '\r') out += '\\r';
    else out += ch;
  }
  return `${q}${out}${q}`;
}
