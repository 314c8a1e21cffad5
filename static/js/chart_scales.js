// Value axes that fit the data, for every chart of the dashboard (usage_charts.js,
// overview_charts.js, staff_reports.js): a round top just above the largest value, round steps
// (1, 2, 2.5 or 5 times a power of ten), as many decimals as the step needs (so no two labels
// read the same), and for bytes the unit the data's size calls for. And "limitLine", a Chart.js
// plugin of our own drawing a limit (a server's memory) as a dashed line, or naming it at the
// top when it is far above the data. Numbers are written in the page's language (<html lang>).
window.ChartScales = (function () {
  "use strict";
  const gettext = window.gettext || ((s) => s);
  const BYTES = ["B", "KB", "MB", "GB", "TB"];
  const LANGUAGE = document.documentElement.lang || undefined;
  const formats = new Map();

  // `value` with `digits` decimals (at most `digits`, trailing zeros dropped, when `trim`), in
  // the page's language: 1,234.5 in English, 1.234,5 in German.
  function number(value, digits, trim) {
    digits = digits || 0;
    const key = digits + (trim ? "t" : "");
    if (!formats.has(key)) {
      let format;
      try {
        format = new Intl.NumberFormat(LANGUAGE, { minimumFractionDigits: trim ? 0 : digits, maximumFractionDigits: digits });
      } catch (error) {
        format = new Intl.NumberFormat(undefined, { minimumFractionDigits: trim ? 0 : digits, maximumFractionDigits: digits });
      }
      formats.set(key, format);
    }
    return formats.get(key).format(value);
  }

  // The smallest round step of which `count` reach `max`; whole steps only when `whole`.
  function niceStep(max, count, whole) {
    const raw = max / count;
    const power = Math.pow(10, Math.floor(Math.log10(raw)));
    const multiples = whole ? [1, 2, 5, 10] : [1, 2, 2.5, 5, 10];
    let step = power * 10;
    for (const m of multiples) { if (m * power >= raw - 1e-12) { step = m * power; break; } }
    return whole ? Math.max(1, Math.round(step)) : step;
  }

  // Digits after the point a step needs: 0.25 needs 2, 20 needs 0.
  function decimals(step) {
    let digits = 0;
    while (digits < 6 && Math.abs(Math.round(step * Math.pow(10, digits)) - step * Math.pow(10, digits)) > 1e-6) digits += 1;
    return digits;
  }

  function axis(max, count, whole, scale, suffix) {
    const step = niceStep(max, count, whole);
    const top = Math.ceil(max / step - 1e-9) * step;
    const digits = decimals(step);
    return {
      max: top * scale,
      stepSize: step * scale,
      format: (v) => number(v / scale, digits) + suffix,
    };
  }

  function largest(values) {
    let max = 0;
    for (const v of values) if (v !== null && v !== undefined && Number.isFinite(v) && v > max) max = v;
    return max;
  }

  // An axis of bytes from 0 to just above `max` bytes, in the unit `max` is best read in.
  function bytesAxis(max, count) {
    count = count || 4;
    if (!(max > 0)) max = 1;
    let unit = 0;
    while (max / Math.pow(1024, unit) >= 1000 && unit < BYTES.length - 1) unit += 1;
    let result = axis(max / Math.pow(1024, unit), count, unit === 0, Math.pow(1024, unit), " " + BYTES[unit]);
    if (result.max / Math.pow(1024, unit) > 1000 && unit < BYTES.length - 1) {
      unit += 1;  // 900 MB would round up to "1250 MB": read as GB instead
      result = axis(max / Math.pow(1024, unit), count, false, Math.pow(1024, unit), " " + BYTES[unit]);
    }
    return result;
  }

  // An axis of a percentage (0.3 reads 0.3 %) or, with `fraction`, of a fraction (0.003 reads 0.3 %).
  function percentAxis(max, count, fraction) {
    count = count || 4;
    const scale = fraction ? 0.01 : 1;
    if (!(max > 0)) max = scale;
    return axis(max / scale, count, false, scale, " %");
  }

  // A count (tickets, servers): whole steps, no decimals.
  function countAxis(max, count) {
    return axis(max > 0 ? max : 1, count || 4, true, 1, "");
  }

  // A money axis in the currency's units (`exponent`: its minor units' digits).
  function moneyAxis(max, count, exponent, currency) {
    const scale = Math.pow(10, exponent || 0);
    return axis(max > 0 ? max / scale : 1, count || 4, false, scale, " " + currency);
  }

  // Bytes as a person reads them: 3 B, 70.4 MB, 2 GB.
  function bytes(value) {
    let unit = 0;
    while (Math.abs(value) >= 1024 && unit < BYTES.length - 1) { value /= 1024; unit += 1; }
    const digits = unit === 0 || Math.abs(value) >= 100 ? 0 : 1;
    return number(value, digits, true) + " " + BYTES[unit];
  }

  // options.plugins.limitLine = {value, label}: a dashed line at `value` when the axis
  // reaches it, else "▲ label (above this scale)" at the top. The canvas's data-limit says
  // which ("line" or "above"), for tests and assistive tools.
  const limitLine = {
    id: "limitLine",
    afterDatasetsDraw(chart, args, options) {
      if (!options || !(options.value > 0)) return;
      const y = chart.scales.y, area = chart.chartArea, ctx = chart.ctx;
      ctx.save();
      ctx.font = "12px system-ui, sans-serif";
      ctx.fillStyle = ctx.strokeStyle = options.color || "#c62828";
      ctx.textAlign = "right";
      if (options.value <= y.max) {
        const at = y.getPixelForValue(options.value);
        ctx.setLineDash([6, 4]);
        ctx.lineWidth = 1.5;
        ctx.beginPath(); ctx.moveTo(area.left, at); ctx.lineTo(area.right, at); ctx.stroke();
        ctx.fillText(options.label, area.right - 4, at - 4);
        chart.canvas.dataset.limit = "line";
      } else {
        ctx.textBaseline = "top";
        ctx.fillText("▲ " + interpolate(gettext("%(label)s (above this scale)"), { label: options.label }, true), area.right - 4, area.top + 2);
        chart.canvas.dataset.limit = "above";
      }
      ctx.restore();
    },
  };

  // A tick callback showing as many decimals as the axis's step needs (0.5 % and 1.0 %, never
  // "1 %" twice): `format(value, digits)` writes one label.
  function byStep(format, scale) {
    scale = scale || 1;
    return function (value, index, ticks) {
      const step = ticks.length > 1 ? Math.abs(ticks[1].value - ticks[0].value) / scale : 1;
      return format(value / scale, decimals(step));
    };
  }

  return { bytesAxis, percentAxis, countAxis, moneyAxis, largest, bytes, number, byStep, decimals, limitLine };
})();
