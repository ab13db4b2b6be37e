// The console's shell: the sign-in gate, the navigation, and the page named by the URL's hash
// (router.ts).
import { useEffect, useRef, useState } from 'preact/hooks';
import { endSession, SESSION_EXPIRED, sessionState, whenSessionEnds } from './api';
import { SignIn } from './pages/sign-in';
import { ModelsPage } from './pages/models';
import { BuildUploadPage } from './pages/build-upload';
import { AudiencesPage } from './pages/audiences';
import { VectorsPage } from './pages/vectors';
import { DeployPage } from './pages/deploy-lazy';
import { LogsPage } from './pages/logs-lazy';
import { LibraryPage } from './pages/library';
import { MetricsPage } from './pages/metrics';
import { PlaygroundPage } from './pages/playground';
import { useHash } from './router';

interface Page {
  path: string;
  label: string;
}

// Only the pages that exist are listed.
const PAGES: Page[] = [
  { path: 'models', label: 'Models' },
  { path: 'builds', label: 'Build upload' },
  { path: 'deploy', label: 'Deploy' },
  { path: 'audiences', label: 'Audiences' },
  { path: 'logs', label: 'Logs' },
  { path: 'vectors', label: 'Vectors' },
  { path: 'library', label: 'Library' },
  { path: 'metrics', label: 'Metrics' },
  { path: 'playground', label: 'Playground' },
];

export function App() {
  const [start] = useState(sessionState);
  const [signedIn, setSignedIn] = useState(start === 'signed-in');
  const [notice, setNotice] = useState<string | undefined>(start === 'expired' ? SESSION_EXPIRED : undefined);
  // Set during render, so that it is in place before any page's first call can answer 401.
  whenSessionEnds((message) => {
    setNotice(message);
    setSignedIn(false);
  });
  if (!signedIn) {
    return (
      <SignIn
        notice={notice}
        onSignedIn={() => {
          setNotice(undefined);
          setSignedIn(true);
        }}
      />
    );
  }
  return <Shell />;
}

function Shell() {
  const route = useHash();
  const [page = 'models', ...rest] = route;
  const main = useRef<HTMLElement>(null);
  const first = useRef(true);
  // On navigation, the page's heading takes the focus, so that keyboard and screen-reader users
  // start at the new page rather than in the navigation.
  useEffect(() => {
    if (first.current) {
      first.current = false;
      return;
    }
    main.current?.querySelector<HTMLElement>('h1')?.focus();
  }, [page]);
  const current = PAGES.find((p) => p.path === page);
  useEffect(() => {
    document.title = `${current?.label ?? 'Not found'} · platform console`;
  }, [current]);
  return (
    <div class="shell">
      <a class="skip" href="#main" onClick={(e) => (e.preventDefault(), main.current?.focus())}>
        Skip to the page
      </a>
      <header class="top">
        <span class="brand">
          <span class="brand-mark" aria-hidden="true">
            ◆
          </span>{' '}
          platform console
        </span>
        <nav aria-label="Pages">
          <ul>
            {PAGES.map((p) => (
              <li key={p.path}>
                <a href={`#/${p.path}`} aria-current={p.path === page ? 'page' : undefined}>
                  {p.label}
                </a>
              </li>
            ))}
          </ul>
        </nav>
        <button type="button" class="secondary sign-out" onClick={() => endSession('You signed out.')}>
          Sign out
        </button>
      </header>
      <main id="main" ref={main} tabIndex={-1}>
        {page === 'models' ? <ModelsPage /> : null}
        {page === 'builds' ? <BuildUploadPage modelId={rest[0]} /> : null}
        {page === 'audiences' ? <AudiencesPage /> : null}
        {page === 'vectors' ? <VectorsPage selected={rest[0]} /> : null}
        {page === 'deploy' ? <DeployPage modelId={rest[0]} buildId={rest[1]} /> : null}
        {page === 'logs' ? <LogsPage modelId={rest[0]} variation={rest[1]} /> : null}
        {page === 'library' ? <LibraryPage /> : null}
        {page === 'metrics' ? <MetricsPage modelId={rest[0]} /> : null}
        {page === 'playground' ? <PlaygroundPage modelId={rest[0]} /> : null}
        {!current ? (
          <div>
            <h1>Page not found</h1>
            <p>
              There is no page <code>#{'/' + route.join('/')}</code>. <a href="#/models">Go to the models</a>.
            </p>
          </div>
        ) : null}
      </main>
    </div>
  );
}
