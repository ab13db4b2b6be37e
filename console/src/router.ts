// Pages are addressed by the URL's hash (#/models, #/vectors/<name>): the host serves one file,
// and every page still has an address that reloads and bookmarks.
import { useEffect, useState } from 'preact/hooks';

/** The hash as path segments: "#/vectors/docs" -> ["vectors", "docs"]. */
export function readHash(): string[] {
  const parts = location.hash
    .replace(/^#\/?/, '')
    .split('/')
    .filter(Boolean)
    .map((p) => {
      try {
        return decodeURIComponent(p);
      } catch {
        return p;
      }
    });
  return parts.length > 0 ? parts : ['models'];
}

export function navigate(...segments: string[]): void {
  location.hash = '#/' + segments.map(encodeURIComponent).join('/');
}

export function useHash(): string[] {
  const [route, setRoute] = useState(readHash);
  useEffect(() => {
    const update = () => setRoute(readHash());
    addEventListener('hashchange', update);
    return () => removeEventListener('hashchange', update);
  }, []);
  return route;
}
