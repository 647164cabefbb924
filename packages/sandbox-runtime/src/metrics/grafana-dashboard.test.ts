import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { createRuntimeMetrics } from './runtime-metrics.js';

// The Grafana dashboard in the repository (docs/grafana/berth-dashboard.json) asks only for what
// Berth exports: the names come from the real registry, so a metric renamed or dropped fails here.
const DASHBOARD = path.resolve(import.meta.dirname, '..', '..', '..', '..', 'docs', 'grafana', 'berth-dashboard.json');

/** Every name a registry's metrics export, a histogram's series included. */
function exportedNames(): Set<string> {
  const names = new Set<string>();
  for (const metric of createRuntimeMetrics().registry.getMetricsAsArray()) {
    names.add(metric.name);
    // prom-client types `type` as an enum; it is the text format's word at run time.
    if (String(metric.type) === 'histogram') for (const suffix of ['_bucket', '_sum', '_count']) names.add(`${metric.name}${suffix}`);
  }
  return names;
}

const PROMQL_WORDS = new Set(['by', 'without', 'on', 'ignoring', 'group_left', 'group_right', 'bool', 'offset', 'and', 'or', 'unless', 'inf', 'nan']);

/** The metric names a PromQL expression reads: identifiers that are no function, keyword, label or variable. */
function metricNamesOf(expression: string): string[] {
  const bare = expression
    .replace(/"(?:[^"\\]|\\.)*"/g, '""') // label values
    .replace(/\{[^}]*\}/g, '') // label matchers
    .replace(/\[[^\]]*\]/g, '') // ranges, with Grafana's $__rate_interval
    .replace(/\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, ''); // label lists
  return [...bare.matchAll(/(?<![\w$.])([a-zA-Z_:][a-zA-Z0-9_:]*)\b(?!\s*\()/g)]
    .map((match) => match[1]!)
    .filter((word) => !PROMQL_WORDS.has(word.toLowerCase()));
}

interface Panel {
  readonly title?: string;
  readonly targets?: ReadonlyArray<{ readonly expr?: string }>;
  readonly panels?: readonly Panel[];
}

const dashboard = JSON.parse(readFileSync(DASHBOARD, 'utf8')) as {
  panels: Panel[];
  templating: { list: Array<{ type: string; query?: string | { query?: string } }> };
};

/** Every query of the dashboard: each panel's (rows' panels too) and each query variable's. */
function queries(): Array<{ where: string; expression: string }> {
  const found: Array<{ where: string; expression: string }> = [];
  const walk = (panels: readonly Panel[]): void => {
    for (const panel of panels) {
      for (const target of panel.targets ?? []) if (target.expr !== undefined) found.push({ where: panel.title ?? '?', expression: target.expr });
      walk(panel.panels ?? []);
    }
  };
  walk(dashboard.panels);
  for (const variable of dashboard.templating.list.filter((candidate) => candidate.type === 'query')) {
    const query = typeof variable.query === 'string' ? variable.query : (variable.query?.query ?? '');
    const inner = /^label_values\(\s*([^,]+),/.exec(query)?.[1] ?? query;
    found.push({ where: 'a variable', expression: inner });
  }
  return found;
}

describe('the Grafana dashboard', () => {
  it('reads the metric names out of PromQL', () => {
    expect(metricNamesOf('sum by (le) (rate(berth_exec_duration_seconds_bucket{outcome="ran"}[$__rate_interval]))')).toEqual([
      'berth_exec_duration_seconds_bucket',
    ]);
    expect(metricNamesOf('berth_capacity_used / on (instance, resource) up{job="x"}')).toEqual(['berth_capacity_used', 'up']);
    expect(metricNamesOf('topk(10, berth_sandbox_pids)')).toEqual(['berth_sandbox_pids']);
  });

  it('asks in every query only for metrics Berth exports, and for at least one', () => {
    const exported = exportedNames();
    const all = queries();
    expect(all.length).toBeGreaterThan(10);
    for (const { where, expression } of all) {
      const names = metricNamesOf(expression);
      expect(names.length, `${where}: ${expression}`).toBeGreaterThan(0);
      for (const name of names) expect(exported, `${where}: ${name} in ${expression}`).toContain(name);
    }
  });
});
