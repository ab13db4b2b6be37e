// The deploy dialog and the request log are loaded when first opened, not on the first visit:
// each is its own script (and stylesheet), fetched from the host like the rest.
import type { ComponentType } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { ErrorNote } from '../ui';

/** A page whose module is imported on first render; a failed load says so in the page. */
export function lazyPage<P extends object>(load: () => Promise<ComponentType<P>>): ComponentType<P> {
  let loaded: ComponentType<P> | undefined;
  return function LazyPage(props: P) {
    const [Page, setPage] = useState<ComponentType<P> | undefined>(() => loaded);
    const [error, setError] = useState<unknown>(undefined);
    useEffect(() => {
      if (Page) return;
      let live = true;
      load().then(
        (p) => {
          loaded = p;
          if (live) setPage(() => p);
        },
        (err: unknown) => live && setError(err),
      );
      return () => {
        live = false;
      };
    }, [Page]);
    if (Page) return <Page {...props} />;
    return error ? <ErrorNote error={error} /> : <p class="hint" aria-busy="true">Loading…</p>;
  };
}

export const DeployPage = lazyPage(() => import('./deploy').then((m) => m.DeployDialogPage));
