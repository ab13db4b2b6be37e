// A TCP port on 127.0.0.1 that nothing listens on at the moment of asking. Another process may
// take it before the caller binds it: servers that can, listen on port 0 instead.
import net from 'node:net';

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}
