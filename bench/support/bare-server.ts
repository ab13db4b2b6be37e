// The peer of the predict HTTP bench: a bare Fastify route on the same machine that parses the
// same JSON body and answers a constant, so the ratio shows what predict costs beyond HTTP.
import Fastify from 'fastify';

const app = Fastify({ logger: false, bodyLimit: 32 * 1024 * 1024 });
app.post('/v1/bare/predict', async () => [{ y: 0.5 }]);
const address = await app.listen({ host: '127.0.0.1', port: 0 });
process.stdout.write(`${address}\n`);
process.on('SIGTERM', () => void app.close().then(() => process.exit(0)));
