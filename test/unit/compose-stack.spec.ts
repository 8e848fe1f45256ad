import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { parse } from 'yaml';
import { describe, expect, it } from 'vitest';
import { FILE_SETTINGS, loadConfig } from '../../apps/api/src/config/config';
import {
  ComposeService,
  DOCKER,
  EXAMPLE_ENV,
  finalStage,
  folderInImage,
  interpolate,
  InterpolationError,
  loadCompose,
  mounts,
  ROOT,
  secretName,
  serviceEnv,
  userIds,
} from '../support/compose';

/**
 * The compose stack read as `docker compose config` renders it (no Docker engine runs here): every
 * rule docs/DEPLOY.md promises an operator, checked in the files themselves. The processes it
 * starts are started for real in test/integration/compose-processes.spec.ts.
 */
const stack = loadCompose('docker-compose.yml');
const remoteAgent = loadCompose('agent-compose.yml');
const services = stack.services;
const API_SERVICES = ['api-1', 'api-2'];
const apiImage = finalStage('Dockerfile.api');
const agentImage = finalStage('Dockerfile.agent');
const API_UID = 10001;
const AGENT_UID = 10002;
const SHARED_GID = 10000;

/** The image a service runs, as far as this repository builds it. */
function imageOf(name: string, service: ComposeService) {
  const dockerfile =
    service.build?.dockerfile ??
    (service.image === 'dryft-api'
      ? 'docker/Dockerfile.api'
      : service.image === 'dryft-agent'
        ? 'docker/Dockerfile.agent'
        : null);
  if (dockerfile === 'docker/Dockerfile.api') return { stage: apiImage, uid: API_UID };
  if (dockerfile === 'docker/Dockerfile.agent') return { stage: agentImage, uid: AGENT_UID };
  if (dockerfile) throw new Error(`${name}: unknown Dockerfile ${dockerfile}`);
  return null;
}

const oneShot = (s: ComposeService) => s.profiles?.includes('tools') ?? false;

describe('docker/docker-compose.yml, rendered', () => {
  it('refuses to render without the settings an operator must give, naming each', () => {
    try {
      interpolate(readFileSync(path.join(DOCKER, 'docker-compose.yml'), 'utf8'), {});
      throw new Error('expected the render to fail');
    } catch (err) {
      expect(err).toBeInstanceOf(InterpolationError);
      const names = (err as InterpolationError).missing.map((m) => m.name);
      for (const n of [
        'DRYFT_HOST',
        'ADMIN_LOGINS',
        'GITHUB_CLIENT_ID',
        'DRYFT_BENCHMARKS_DIR',
        'DRYFT_MODELS_DIR',
      ])
        expect(names).toContain(n);
      for (const m of (err as InterpolationError).missing) expect(m.message).toMatch(/in docker\/\.env/);
    }
  });

  it('has the services of a hub: Postgres, Redis, two API replicas, the TLS edge, Prometheus and Grafana, the agent, the tools', () => {
    expect(Object.keys(services).sort()).toEqual(
      [
        'admin',
        'agent',
        'api-1',
        'api-2',
        'backup',
        'edge',
        'grafana',
        'postgres',
        'prometheus',
        'redis',
      ].sort(),
    );
  });

  it('restarts every long-running service, and never a one-shot tool', () => {
    for (const [name, s] of Object.entries(services)) {
      if (oneShot(s)) expect(s.restart, name).toBe('no');
      else expect(['unless-stopped', 'always'], name).toContain(s.restart);
    }
    expect(remoteAgent.services.agent.restart).toBe('unless-stopped');
  });

  it('gives every long-running service a health check (in the file or its image)', () => {
    for (const [name, s] of Object.entries(services)) {
      if (oneShot(s)) continue;
      const image = imageOf(name, s);
      expect(Boolean(s.healthcheck) || Boolean(image?.stage.healthcheck), name).toBe(true);
    }
    // The API's checks ask readiness (database, migrations, Redis, sockets); the edge's goes
    // through nginx to a replica.
    for (const name of API_SERVICES)
      expect(JSON.stringify(services[name].healthcheck)).toContain('/api/health/ready');
    expect(JSON.stringify(services.edge.healthcheck)).toContain('/api/health');
    expect(agentImage.healthcheck).toContain('/var/lib/dryft-agent/agent.pid');
  });

  it('starts the replicas after a healthy Postgres and Redis, and the edge after healthy replicas', () => {
    for (const name of API_SERVICES)
      expect(services[name].depends_on).toEqual({
        postgres: { condition: 'service_healthy' },
        redis: { condition: 'service_healthy' },
      });
    expect(services.edge.depends_on).toEqual({
      'api-1': { condition: 'service_healthy' },
      'api-2': { condition: 'service_healthy' },
    });
  });

  it('runs the images as their own users, never root, sharing one group for the agent token', () => {
    expect(userIds(apiImage.user)).toEqual({ uid: API_UID, gid: SHARED_GID });
    expect(userIds(agentImage.user)).toEqual({ uid: AGENT_UID, gid: SHARED_GID });
    expect(apiImage.runs.join(' ')).toMatch(new RegExp(`useradd .*--uid ${API_UID} --gid ${SHARED_GID}`));
    expect(agentImage.runs.join(' ')).toMatch(new RegExp(`useradd .*--uid ${AGENT_UID} --gid ${SHARED_GID}`));
  });

  it('makes every folder a named volume is mounted on in the image, owned by the user that writes it', () => {
    // A fresh named volume takes the image folder's owner and mode: made there, it is writable.
    const checked: string[] = [];
    for (const [name, s] of [
      ...Object.entries(services),
      ['remote agent', remoteAgent.services.agent] as const,
    ]) {
      const image = imageOf(name, s);
      if (!image) continue;
      for (const m of mounts(s).filter((x) => x.named)) {
        const folder = folderInImage(image.stage, m.target);
        expect(folder.made, `${name}: ${m.target} is made in its image`).toBe(true);
        if (m.readOnly) {
          // Read through the shared group.
          expect(folder.owner?.gid, `${name}: ${m.target}`).toBe(SHARED_GID);
        } else if (m.source === 'agent-token') {
          // The API's user writes the token; group-writable, setgid: what it writes stays in group dryft.
          expect(folder.owner, `${name}: ${m.target}`).toEqual({ uid: API_UID, gid: SHARED_GID });
          expect(folder.mode).toBe('2770');
        } else {
          expect(folder.owner?.uid, `${name}: ${m.target} owned by uid ${image.uid}`).toBe(image.uid);
        }
        checked.push(`${name}:${m.target}`);
      }
    }
    expect(checked).toEqual(
      expect.arrayContaining([
        'api-1:/artifacts',
        'api-2:/artifacts',
        'agent:/var/lib/dryft-agent',
        'agent:/run/dryft-agent',
        'admin:/run/dryft-agent',
      ]),
    );
    // /artifacts in particular: the first upload failed with EACCES on a root-owned volume.
    expect(folderInImage(apiImage, '/artifacts').owner).toEqual({ uid: API_UID, gid: SHARED_GID });
  });

  it('shares one artifact store between the replicas, where ARTIFACT_DIR points', () => {
    for (const name of API_SERVICES) {
      const env = serviceEnv(services[name]);
      expect(mounts(services[name])).toContainEqual({
        source: 'artifacts',
        target: env.ARTIFACT_DIR,
        readOnly: false,
        named: true,
      });
    }
    expect(apiImage.env.ARTIFACT_DIR).toBe('/artifacts');
  });

  it('holds no password, key or secret in the file: each is a Docker secret read through *_FILE', () => {
    const text = readFileSync(path.join(DOCKER, 'docker-compose.yml'), 'utf8');
    expect(text).not.toMatch(/POSTGRES_PASSWORD:/);
    expect(text).not.toMatch(/postgres:\/\/[^@\s/]+:[^@\s]+@/);
    for (const [name, s] of [
      ...Object.entries(services),
      ['remote agent', remoteAgent.services.agent] as const,
    ]) {
      const env = serviceEnv(s);
      for (const [key, value] of Object.entries(env)) {
        if (/PASSWORD|SECRET|PRIVATE_KEY|TOKEN/.test(key) && !key.endsWith('_FILE'))
          throw new Error(`${name}: ${key} is given in the environment; use ${key}_FILE and a secret`);
        if (!key.endsWith('_FILE')) continue;
        const secret = secretName(value);
        expect(secret, `${name}: ${key} points at /run/secrets/…`).not.toBeNull();
        expect(s.secrets, `${name}: ${key}'s secret is mounted`).toContain(secret);
      }
    }
    // Every secret of the stack comes from a file that compose-secrets.sh makes and git ignores.
    const made = [
      ...readFileSync(path.join(ROOT, 'scripts/compose-secrets.sh'), 'utf8').matchAll(/^put (\S+)/gm),
    ].map((m) => m[1]);
    for (const [name, secret] of Object.entries(stack.secrets ?? {})) {
      expect(secret.file, name).toMatch(/^\.\/secrets\//);
      expect(made, `${name}: compose-secrets.sh makes ${secret.file}`).toContain(path.basename(secret.file!));
    }
    expect(readFileSync(path.join(ROOT, '.gitignore'), 'utf8')).toMatch(/^\/docker\/secrets\/$/m);
    // Nor baked into an image: the build context is the repository root.
    const dockerignore = readFileSync(path.join(ROOT, '.dockerignore'), 'utf8').split('\n');
    for (const p of ['docker/secrets', 'docker/.env', 'docker/certs', '.data', '**/node_modules'])
      expect(dockerignore, `.dockerignore leaves out ${p}`).toContain(p);
    expect(serviceEnv(services.postgres).POSTGRES_PASSWORD_FILE).toBe('/run/secrets/postgres_password');
  });

  it('gives the API every setting production needs, and every secret the config takes as a file', async () => {
    for (const name of [...API_SERVICES, 'admin']) {
      const env = serviceEnv(services[name]);
      expect(env.NODE_ENV).toBe('production');
      expect(env.PUBLIC_URL).toBe(`https://${EXAMPLE_ENV.DRYFT_HOST}`);
      for (const key of [
        'DATABASE_PASSWORD',
        'GITHUB_CLIENT_SECRET',
        'GITHUB_APP_PRIVATE_KEY',
        'GITHUB_WEBHOOK_SECRET',
        'HIDDEN_SEED_SECRET',
      ]) {
        expect(FILE_SETTINGS, key).toContain(key);
        expect(env[`${key}_FILE`], `${name}: ${key}_FILE`).toMatch(/^\/run\/secrets\//);
      }
      for (const key of [
        'GITHUB_APP_ID',
        'GITHUB_APP_SLUG',
        'ADMIN_LOGINS',
        'GITHUB_CLIENT_ID',
        'REDIS_URL',
        'BENCHMARKS_DIR',
        'TRUST_PROXY',
      ])
        expect(Object.keys(env), `${name}: ${key}`).toContain(key);
    }
    // The config, given exactly this environment with the secrets as files, starts a production hub.
    const dir = mkdtempSync(path.join(tmpdir(), 'dryft-compose-'));
    try {
      const secrets: Record<string, string> = {
        postgres_password: 'pw-from-secret',
        hidden_seed_secret: 'c0'.repeat(32),
        github_client_secret: 'oauth-secret',
        github_app_private_key: '-----BEGIN RSA PRIVATE KEY-----\nk\n-----END RSA PRIVATE KEY-----\n',
        github_webhook_secret: 'hook',
      };
      const asFiles = (env: Record<string, string>, withApp: boolean) =>
        Object.fromEntries(
          Object.entries(env).map(([k, v]) => {
            const secret = secretName(v);
            if (!secret) return [k, v];
            const file = path.join(dir, `${secret}-${withApp}`);
            const app = secret === 'github_app_private_key' || secret === 'github_webhook_secret';
            writeFileSync(file, app && !withApp ? '' : secrets[secret]);
            return [k, file];
          }),
        );
      const env = serviceEnv(services['api-1']);
      const plain = loadConfig(asFiles(env, false), '/app');
      expect(plain).toMatchObject({
        isProduction: true,
        cookieSecure: true,
        githubOAuthConfigured: true,
        githubAppConfigured: false,
        artifactDir: '/artifacts',
        benchmarksDir: '/etc/dryft/benchmarks',
        HIDDEN_SEED_SECRET: 'c0'.repeat(32),
        ADMIN_LOGINS: [EXAMPLE_ENV.ADMIN_LOGINS],
        // The metrics listener Prometheus scrapes (checked below).
        METRICS_PORT: 9464,
        METRICS_HOST: '0.0.0.0',
      });
      expect(new URL(plain.DATABASE_URL!).password).toBe('pw-from-secret');
      // With the App's ids in docker/.env and its two files filled in, run on push is on.
      const app = serviceEnv(
        loadCompose('docker-compose.yml', {
          ...EXAMPLE_ENV,
          GITHUB_APP_ID: '42',
          GITHUB_APP_SLUG: 'dryft-app',
        }).services['api-1'],
      );
      expect(loadConfig(asFiles(app, true), '/app')).toMatchObject({
        githubAppConfigured: true,
        GITHUB_APP_ID: '42',
      });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('runs both replicas with one hidden-seed secret, and says the migrations are locked', () => {
    const [a, b] = API_SERVICES.map((n) => serviceEnv(services[n]));
    expect(a).toEqual(b);
    expect(readFileSync(path.join(DOCKER, 'docker-compose.yml'), 'utf8')).toMatch(/advisory lock/);
    expect(readFileSync(path.join(ROOT, 'apps/api/src/database/data-source.ts'), 'utf8')).toMatch(
      /pg_advisory_lock/,
    );
  });

  it('mounts the private benchmark definitions read-only where BENCHMARKS_DIR points, never the public ones', () => {
    for (const name of API_SERVICES) {
      const env = serviceEnv(services[name]);
      const m = mounts(services[name]).find((x) => x.target === env.BENCHMARKS_DIR);
      expect(m, name).toMatchObject({ readOnly: true, source: EXAMPLE_ENV.DRYFT_BENCHMARKS_DIR });
    }
    expect(readFileSync(path.join(DOCKER, 'docker-compose.yml'), 'utf8')).toMatch(
      /\$\{DRYFT_BENCHMARKS_DIR:\?/,
    );
  });

  it('ends TLS at the edge: 443 published, certificates from a read-only folder, the replicas behind it', () => {
    const nginx = readFileSync(path.join(DOCKER, 'nginx.conf'), 'utf8');
    expect(services.edge.ports).toContain('443:443');
    // Only the edge is published: Postgres, Redis, the replicas and Prometheus are on the compose
    // network only; Grafana on the host's loopback only (an SSH tunnel reaches it).
    for (const [name, s] of Object.entries(services))
      if (name === 'grafana') for (const p of s.ports ?? []) expect(p, name).toMatch(/^127\.0\.0\.1:/);
      else if (name !== 'edge') expect(s.ports, name).toBeUndefined();
    expect(nginx).toMatch(/listen 443 ssl;/);
    const cert = /ssl_certificate (\S+);/.exec(nginx)![1];
    const key = /ssl_certificate_key (\S+);/.exec(nginx)![1];
    const certs = mounts(services.edge).find((m) => cert.startsWith(`${m.target}/`));
    expect(certs).toMatchObject({ readOnly: true });
    expect(key.startsWith(`${certs!.target}/`)).toBe(true);
    expect(mounts(services.edge)).toContainEqual({
      source: './nginx.conf',
      target: '/etc/nginx/nginx.conf',
      readOnly: true,
      named: false,
    });
    const upstream = /upstream dryft \{([^}]*)\}/.exec(nginx)![1];
    expect([...upstream.matchAll(/server ([\w-]+):3000/g)].map((m) => m[1])).toEqual(API_SERVICES);
    expect(nginx).toMatch(/X-Forwarded-Proto \$scheme/);
    expect(serviceEnv(services['api-1']).TRUST_PROXY).toMatch(/uniquelocal/);
    // GitHub's push webhooks (25 MB at most) pass the edge.
    expect(Number(/client_max_body_size (\d+)m;/.exec(nginx)![1])).toBeGreaterThanOrEqual(25);
  });

  it('runs the API and the agent daemon on Node 24 LTS (CI runs the unit and integration tiers under it too)', () => {
    expect(apiImage.from).toMatch(/^node:24-/);
    for (const file of ['Dockerfile.api', 'Dockerfile.agent']) {
      const froms = [...readFileSync(path.join(DOCKER, file), 'utf8').matchAll(/^FROM (node:\S+)/gm)].map(
        (m) => m[1],
      );
      expect(froms.length, file).toBeGreaterThan(0);
      for (const from of froms) expect(from, file).toMatch(/^node:24-bookworm-slim\b/);
    }
    expect(readFileSync(path.join(ROOT, 'scripts/test.mjs'), 'utf8')).toMatch(/const NEXT_NODE = '24\./);
  });

  it("scrapes every replica's METRICS_PORT with Prometheus, the alert rules loaded, never published", () => {
    const envs = API_SERVICES.map((n) => serviceEnv(services[n]));
    for (const env of envs) {
      expect(Number(env.METRICS_PORT), 'METRICS_PORT').toBeGreaterThan(0);
      // Bound on every interface of the container, so Prometheus reaches it over the compose network.
      expect(env.METRICS_HOST).toBe('0.0.0.0');
    }
    const prom = services.prometheus;
    expect(prom.restart).toBe('unless-stopped');
    expect(prom.ports).toBeUndefined();
    const arg = (name: string) => prom.command?.find((c) => c.startsWith(`--${name}=`))?.split('=')[1];
    const configMount = mounts(prom).find((m) => m.target === arg('config.file'));
    expect(configMount).toMatchObject({ source: './prometheus/prometheus.yml', readOnly: true });
    const config = parse(readFileSync(path.join(DOCKER, 'prometheus/prometheus.yml'), 'utf8')) as {
      rule_files: string[];
      scrape_configs: { job_name: string; metrics_path?: string; static_configs: { targets: string[] }[] }[];
    };
    // Every replica at its METRICS_PORT (the default path, /metrics), and nothing else.
    const targets = config.scrape_configs.flatMap((c) => c.static_configs.flatMap((s) => s.targets));
    expect(targets.sort()).toEqual(API_SERVICES.map((n, i) => `${n}:${envs[i].METRICS_PORT}`).sort());
    for (const c of config.scrape_configs) expect(c.metrics_path ?? '/metrics').toBe('/metrics');
    // The alert rules are mounted where rule_files looks, and are rules.
    for (const file of config.rule_files) {
      const m = mounts(prom).find((x) => x.target === file);
      expect(m, `${file} is mounted`).toMatchObject({ readOnly: true });
      const rules = parse(readFileSync(path.join(DOCKER, m!.source), 'utf8')) as {
        groups: { rules: { alert: string; expr: string }[] }[];
      };
      expect(rules.groups.flatMap((g) => g.rules).length).toBeGreaterThan(3);
    }
    expect(config.rule_files.map((f) => mounts(prom).find((x) => x.target === f)?.source)).toContain(
      './prometheus/alerts.yml',
    );
    // Its data on a named volume, at the storage path.
    expect(mounts(prom)).toContainEqual({
      source: 'prometheus-data',
      target: arg('storage.tsdb.path'),
      readOnly: false,
      named: true,
    });
  });

  it('provisions Grafana with Prometheus as its data source and the hub dashboard, the admin password a secret', () => {
    const grafana = services.grafana;
    expect(grafana.restart).toBe('unless-stopped');
    const env = serviceEnv(grafana);
    expect(env.GF_SECURITY_ADMIN_PASSWORD__FILE).toBe('/run/secrets/grafana_admin_password');
    expect(grafana.secrets).toContain('grafana_admin_password');
    expect(env.GF_AUTH_ANONYMOUS_ENABLED).toBe('false');
    const provisioning = mounts(grafana).find((m) => m.target === '/etc/grafana/provisioning');
    expect(provisioning).toMatchObject({ source: './grafana/provisioning', readOnly: true });
    const dir = path.join(DOCKER, 'grafana/provisioning');
    const sources = parse(readFileSync(path.join(dir, 'datasources/prometheus.yml'), 'utf8')) as {
      datasources: { type: string; url: string; isDefault?: boolean }[];
    };
    // The data source is the compose service, at the port its own health check asks.
    const port = /127\.0\.0\.1:(\d+)/.exec(JSON.stringify(services.prometheus.healthcheck))![1];
    expect(sources.datasources).toEqual([
      expect.objectContaining({ type: 'prometheus', url: `http://prometheus:${port}`, isDefault: true }),
    ]);
    const providers = parse(readFileSync(path.join(dir, 'dashboards/dryft.yml'), 'utf8')) as {
      providers: { type: string; options: { path: string } }[];
    };
    const dashboard = mounts(grafana).find((m) => m.source === './grafana/dryft.json');
    expect(dashboard).toMatchObject({ readOnly: true });
    expect(providers.providers.map((p) => p.options.path)).toContain(path.posix.dirname(dashboard!.target));
    const json = JSON.parse(readFileSync(path.join(DOCKER, 'grafana/dryft.json'), 'utf8')) as {
      templating: { list: { type: string; query: string }[] };
      panels: { title: string }[];
    };
    // Its panels pick the data source through a variable of type prometheus: the provisioned default.
    expect(json.templating.list).toContainEqual(
      expect.objectContaining({ type: 'datasource', query: 'prometheus' }),
    );
    expect(json.panels.map((p) => p.title)).toEqual(
      expect.arrayContaining([
        'Queue depth',
        'GPU seconds per official run (p50, p95)',
        'GPU seconds per candidate-timed second',
      ]),
    );
    expect(grafana.depends_on).toEqual({ prometheus: { condition: 'service_healthy' } });
    expect(mounts(grafana)).toContainEqual({
      source: 'grafana-data',
      target: '/var/lib/grafana',
      readOnly: false,
      named: true,
    });
  });

  it("builds the agent on CUDA 12.4 with the decode page's pinned runtime", () => {
    expect(agentImage.from).toMatch(/^nvidia\/cuda:12\.4(\.\d+)?-/);
    const text = readFileSync(path.join(DOCKER, 'Dockerfile.agent'), 'utf8');
    expect(text).toMatch(/uv python install 3\.11/);
    expect(text).toMatch(/COPY starters\/qwen3-4b-decode\/requirements\.txt/);
    const pins = readFileSync(path.join(ROOT, 'starters/qwen3-4b-decode/requirements.txt'), 'utf8');
    const page = (
      parse(readFileSync(path.join(ROOT, 'config/benchmarks/qwen3-4b-decode.yaml'), 'utf8')) as {
        runtime: string;
      }
    ).runtime;
    for (const [pkg, version, words] of [
      ['torch', '2.5.1', 'PyTorch 2.5.1'],
      ['triton', '3.1.0', 'Triton 3.1.0'],
      ['transformers', '4.51.3', 'Transformers 4.51.3'],
      ['safetensors', '0.5.3', 'safetensors 0.5.3'],
      ['tokenizers', '0.21.1', 'tokenizers 0.21.1'],
    ]) {
      expect(pins).toMatch(new RegExp(`^${pkg}==${version.replace(/\./g, '\\.')}$`, 'm'));
      expect(page).toContain(words);
    }
    expect(page).toContain('Python 3.11');
    expect(page).toContain('CUDA 12.4');
    // The build checks the result: the wrong torch or CUDA stops it.
    expect(text).toMatch(/torch\.version\.cuda == '12\.4'/);
    expect(agentImage.env.HARNESS_PYTHON).toBe('/opt/venv/bin/python');
  });

  it('reserves the GPUs for the agent, mounts the model read-only where the definitions look', () => {
    const agentConfig = JSON.parse(readFileSync(path.join(DOCKER, 'agent.json'), 'utf8'));
    const qwen = parse(readFileSync(path.join(ROOT, 'config/benchmarks/qwen3-4b-decode.yaml'), 'utf8')) as {
      model: { path: string };
    };
    for (const [name, s] of [
      ['agent', services.agent],
      ['remote agent', remoteAgent.services.agent],
    ] as const) {
      expect(s.deploy?.resources?.reservations?.devices, name).toEqual([
        { driver: 'nvidia', count: 'all', capabilities: ['gpu'] },
      ]);
      const models = mounts(s).find((m) => m.target === '/models');
      expect(models, name).toMatchObject({ readOnly: true, source: EXAMPLE_ENV.DRYFT_MODELS_DIR });
      expect(mounts(s)).toContainEqual({
        source: './agent.json',
        target: '/etc/dryft/agent.json',
        readOnly: true,
        named: false,
      });
      expect(s.cap_add, name).toEqual(['SYS_ADMIN']);
    }
    for (const p of [...Object.values(agentConfig.models as Record<string, string>), qwen.model.path])
      expect(p.startsWith('/models/')).toBe(true);
    expect(agentConfig.harness.python).toBe(agentImage.env.HARNESS_PYTHON);
    expect(agentConfig.workDir).toBe('/var/lib/dryft-agent');
    // The agent reaches the hub through the edge's plain listener on the compose network.
    expect(agentConfig.apiUrl).toBe('http://edge:3000');
    expect(readFileSync(path.join(DOCKER, 'nginx.conf'), 'utf8')).toMatch(/listen 3000;/);
  });

  it('bootstraps without a sign-in: admin writes the agent token to the volume the agent reads', () => {
    const agentConfig = JSON.parse(readFileSync(path.join(DOCKER, 'agent.json'), 'utf8'));
    expect(services.admin.entrypoint).toEqual(['node', 'apps/api/dist/admin-cli/main.js']);
    expect(services.admin.image).toBe(services['api-1'].image);
    const written = mounts(services.admin).find((m) => m.source === 'agent-token')!;
    const read = mounts(services.agent).find((m) => m.source === 'agent-token')!;
    expect(written.readOnly).toBe(false);
    expect(read.readOnly).toBe(true);
    expect(path.dirname(agentConfig.tokenFile)).toBe(read.target);
    expect(written.target).toBe(read.target);
    // The remote agent reads the same token from a secret file instead.
    const remote = serviceEnv(remoteAgent.services.agent);
    expect(remoteAgent.services.agent.secrets).toContain(secretName(remote.DRYFT_AGENT_TOKEN_FILE));
    expect(remoteAgent.secrets?.agent_token.file).toBe('./secrets/agent_token');
  });

  it("backs up with the server's own Postgres major, the artifact store mounted, the scripts in place", () => {
    expect(services.backup.image).toBe(services.postgres.image);
    expect(services.backup.entrypoint?.[0]).toBe('/scripts/backup.sh');
    const env = serviceEnv(services.backup);
    expect(mounts(services.backup)).toContainEqual(
      expect.objectContaining({ source: 'artifacts', target: env.ARTIFACT_DIR }),
    );
    expect(mounts(services.backup)).toContainEqual(
      expect.objectContaining({ source: '../scripts', target: '/scripts', readOnly: true }),
    );
    expect(services.backup.secrets).toContain(secretName(env.DATABASE_PASSWORD_FILE));
    expect(env.DATABASE_URL).toBe(serviceEnv(services['api-1']).DATABASE_URL);
  });
});
