// Sign-in: an API key, exchanged for an access token at the public endpoint as the CLI does.
import { useEffect, useRef, useState } from 'preact/hooks';
import { signIn } from '../api';
import { messageOf } from '../ui';

export function SignIn({ notice, onSignedIn }: { notice: string | undefined; onSignedIn: () => void }) {
  const [key, setKey] = useState('');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | undefined>(undefined);
  const input = useRef<HTMLInputElement>(null);
  useEffect(() => {
    document.title = 'Sign in · platform console';
    input.current?.focus();
  }, []);

  const submit = async (e: Event) => {
    e.preventDefault();
    if (key.trim() === '') {
      setError('Enter your API key.');
      return;
    }
    setBusy(true);
    setError(undefined);
    try {
      await signIn(key.trim());
      onSignedIn();
    } catch (err) {
      setError(messageOf(err));
      setBusy(false);
      input.current?.select();
    }
  };

  return (
    <main class="sign-in">
      <form class="card" onSubmit={submit} aria-labelledby="sign-in-title" noValidate>
        <p class="brand">
          <span class="brand-mark" aria-hidden="true">
            ◆
          </span>{' '}
          platform console
        </p>
        <h1 id="sign-in-title">Sign in</h1>
        {notice ? (
          <p class="notice" role="status">
            {notice}
          </p>
        ) : null}
        <label for="api-key">API key</label>
        <input
          id="api-key"
          ref={input}
          type="password"
          autocomplete="off"
          spellcheck={false}
          placeholder="psk_…"
          value={key}
          onInput={(e) => setKey((e.target as HTMLInputElement).value)}
          aria-invalid={error ? true : undefined}
          aria-describedby={error ? 'sign-in-error key-help' : 'key-help'}
        />
        {error ? (
          <p class="error" role="alert" id="sign-in-error">
            {error}
          </p>
        ) : null}
        <button type="submit" disabled={busy}>
          {busy ? 'Signing in…' : 'Sign in'}
        </button>
        <p class="help" id="key-help">
          The key is exchanged for an access token that this tab keeps until it closes. Make a key on the server with{' '}
          <code>platform keys create --name me</code>.
        </p>
      </form>
    </main>
  );
}
