// The model library: the GGUF catalogue of MODELS_DIR, and deploying, re-typing and undeploying
// library models. Loading is asynchronous: deploy answers 202 and the status goes PENDING ->
// DEPLOYING -> LIVE (or FAILED with the reason); an instance-type change answers 202 and the
// record shows `pending_instance_type` until traffic has switched.
import type { FastifyPluginAsync, FastifyRequest } from 'fastify';
import { projectVisible } from '../../auth/permissions.js';
import { grantOf, type RouteAccess } from '../access.js';
import type { LibraryDeployment, LibraryService } from '../../llm/library/service.js';
import { INSTANCE_TYPES, type InstanceType } from '../../native/surface.js';
import { LIBRARY_PROJECT, MODEL_ID_PATTERN } from '../../models/names.js';
import { listOf, modelParams, replicaCountSchema, responses } from '../schemas.js';
import { holdsLibraryModel, type ReplicaDirectory } from '../../cluster/replicas.js';
import { invalidArgument } from '../../errors.js';
import { MAX_SPECULATIVE_TOKENS, SPECULATIVE_PATTERN } from '../../llm/library/speculative.js';

const deploymentSchema = {
  type: 'object',
  required: [
    'model_id',
    'name',
    'file',
    'general_name',
    'license',
    'license_link',
    'instance_type',
    'threads',
    'speculative',
    'draft_model',
    'placement',
    'pending_instance_type',
    'last_instance_error',
    'status',
    'reason',
    'created_at',
    'updated_at',
  ],
  properties: {
    model_id: { type: 'string' },
    // The deployment's name: unique, immutable; by default the file name without .gguf.
    name: { type: 'string' },
    file: { type: 'string' },
    // The file's general.name (two quantizations of one model share it); null when it has none or cannot be read now.
    general_name: { type: ['string', 'null'] },
    license: { type: ['string', 'null'] },
    license_link: { type: ['string', 'null'] },
    instance_type: { type: 'string' },
    threads: { type: ['integer', 'null'] },
    // Speculative decoding: "ngram:<k>" (prompt lookup), or null.
    speculative: { type: ['string', 'null'] },
    // The draft model of "draft:<k>", a file of MODELS_DIR.
    draft_model: { type: ['string', 'null'] },
    // On how many replicas it runs; null: every replica.
    placement: { type: ['integer', 'null'] },
    pending_instance_type: { type: ['string', 'null'] },
    last_instance_error: { type: ['string', 'null'] },
    status: { type: 'string' },
    reason: { type: ['string', 'null'] },
    created_at: { type: 'integer' },
    updated_at: { type: 'integer' },
    // GET of one deployment: the live replicas that have the model loaded.
    replicas: replicaCountSchema,
  },
} as const;

/** src/llm/library/catalog.ts: the GGUF files of MODELS_DIR, and those that could not be read. */
const catalogSchema = {
  type: 'object',
  required: ['models', 'problems'],
  properties: {
    models: {
      type: 'array',
      items: {
        type: 'object',
        required: ['name', 'file', 'size_bytes', 'architecture', 'parameters', 'quantization', 'context_length', 'license', 'license_link', 'chat_template', 'serves', 'unsupported'],
        properties: {
          name: { type: 'string' },
          file: { type: 'string' },
          size_bytes: { type: 'integer' },
          architecture: { type: 'string' },
          parameters: { type: 'integer' },
          quantization: { type: 'string' },
          context_length: { type: ['integer', 'null'] },
          license: { type: ['string', 'null'] },
          license_link: { type: ['string', 'null'] },
          chat_template: { type: 'boolean' },
          // embeddings: a bert / nomic-bert file (POST /v1/<model_id>/embeddings); chat: the chat and completion routes
          serves: { type: 'string', enum: ['chat', 'embeddings'] },
          // Why the engine cannot load the file (architecture or tensor types), or null: a deploy of it is refused.
          unsupported: { type: ['string', 'null'] },
        },
      },
    },
    problems: { type: 'array', items: { type: 'object', required: ['file', 'error'], properties: { file: { type: 'string' }, error: { type: 'string' } } } },
  },
} as const;
const instanceSchema = {
  instance_type: { type: 'string', enum: [...INSTANCE_TYPES] },
  threads: { type: 'integer', minimum: 1, maximum: 1024 },
} as const;

/** What a route on one library model (`:model_id`) needs: `action` on that model (src/server/access.ts). */
const onModel = (action: RouteAccess['action']): { access: RouteAccess } => ({
  access: { action, model: (request: FastifyRequest) => (request.params as { model_id: string }).model_id },
});

export const libraryRoutes: FastifyPluginAsync<{ library: LibraryService; replicas: ReplicaDirectory }> = async (app, { library, replicas }) => {
  const json = (d: LibraryDeployment, generalName: string | null) => ({
    model_id: d.modelId,
    name: d.name,
    file: d.file,
    general_name: generalName,
    license: d.license,
    license_link: d.licenseLink,
    instance_type: d.instanceType,
    threads: d.threads,
    speculative: d.speculative,
    draft_model: d.draftModel,
    placement: d.replicas,
    pending_instance_type: library.pendingInstance.get(d.modelId) ?? null,
    last_instance_error: library.instanceErrors.get(d.modelId) ?? null,
    status: d.status,
    reason: d.reason,
    created_at: d.createdAt,
    updated_at: d.updatedAt,
  });

  app.get('/api/v1/library', { config: { access: { action: 'read' } }, schema: { summary: 'The GGUF catalogue of MODELS_DIR, and the files that could not be read', response: responses({ 200: catalogSchema }) } }, async () => {
    const { models, problems } = await library.catalog();
    return {
      models: models.map((m) => ({
        name: m.name,
        file: m.file,
        size_bytes: m.sizeBytes,
        architecture: m.architecture,
        parameters: m.parameters,
        quantization: m.quantization,
        context_length: m.contextLength,
        license: m.license,
        license_link: m.licenseLink,
        chat_template: m.chatTemplate,
        serves: m.serves,
        unsupported: m.unsupported,
      })),
      problems,
    };
  });

  app.get(
    '/api/v1/library/deployments',
    {
      config: { access: { action: 'read', inHandler: `a key scoped to a project other than "${LIBRARY_PROJECT}" lists none` } },
      schema: { summary: 'List the library deployments', response: responses({ 200: listOf('deployments', deploymentSchema) }) },
    },
    async (request) => {
      const deployments = projectVisible(grantOf(request), LIBRARY_PROJECT) ? await library.list() : [];
      const generalNames = await library.generalNames(deployments);
      return { deployments: deployments.map((d) => json(d, generalNames.get(d.modelId) ?? null)) };
    },
  );

  app.post<{ Body: { file?: string; name?: string; model_id: string; instance_type?: InstanceType; threads?: number; replicas?: number; speculative?: string; draft_model?: string } }>(
    '/api/v1/library/deployments',
    {
      // Library models are made in project "library".
      config: { access: { action: 'deploy', newProject: () => LIBRARY_PROJECT } },
      schema: {
        summary: 'Deploy a GGUF file of the catalogue as a library model (202; loads in the background)',
        body: {
          type: 'object',
          required: ['model_id'],
          properties: {
            file: { type: 'string', minLength: 1, maxLength: 1024, description: 'The GGUF file to deploy: relative to MODELS_DIR, its base name, or its general.name when no other file shares it' },
            name: {
              type: 'string',
              minLength: 1,
              maxLength: 1024,
              description:
                'The deployment name, unique among deployments and immutable (default: the file name without .gguf). Without "file", this names the file to deploy instead (as before "file" existed), and the deployment takes the default name',
            },
            model_id: { type: 'string', pattern: MODEL_ID_PATTERN },
            ...instanceSchema,
            // Each replica runs its own engine; the others forward the model's requests.
            replicas: { type: 'integer', minimum: 1, maximum: 1000, description: 'On how many replicas of the host it runs (default: every replica)' },
            speculative: {
              type: 'string',
              pattern: SPECULATIVE_PATTERN,
              description: `Speculative decoding: "ngram:<k>" verifies up to k (1 to ${MAX_SPECULATIVE_TOKENS}) tokens drafted from the request's own text at each step, "draft:<k>" up to k tokens drafted by draft_model; the output is unchanged (default: off)`,
            },
            draft_model: {
              type: 'string',
              minLength: 1,
              maxLength: 1024,
              description: 'A GGUF file of MODELS_DIR with the model\'s vocabulary, smaller, that drafts for speculative decoding (speculative defaults to draft:4)',
            },
          },
        },
        response: responses({ 202: deploymentSchema }),
      },
    },
    async (request, reply) => {
      const { file, name, model_id, instance_type = 'cpu', threads, replicas: count, speculative, draft_model } = request.body;
      // Without "file", "name" names the file (the form older clients send) and the name is the default.
      const source = file ?? name;
      if (source === undefined) throw invalidArgument('"file" is required: the GGUF file of MODELS_DIR to deploy (see GET /api/v1/library)', 'file');
      const dep = await library.deploy(
        source,
        model_id,
        instance_type,
        threads ?? null,
        count ?? null,
        file !== undefined ? (name ?? null) : null,
        file !== undefined ? 'file' : 'name',
        speculative ?? null,
        draft_model ?? null,
      );
      reply.code(202);
      return json(dep, (await library.generalNames([dep])).get(dep.modelId) ?? null);
    },
  );

  app.get<{ Params: { model_id: string } }>(
    '/api/v1/library/deployments/:model_id',
    { config: onModel('read'), schema: { summary: 'Get one library deployment and its status', params: modelParams, response: responses({ 200: deploymentSchema }) } },
    async (request) => {
      const dep = await library.get(request.params.model_id);
      const count = await replicas.appliedOn((load) => holdsLibraryModel(load, dep.modelId));
      // Of the replicas it is placed on: all the live ones, or as many as asked for.
      const generalName = (await library.generalNames([dep])).get(dep.modelId) ?? null;
      return { ...json(dep, generalName), replicas: { applied: count.applied, total: dep.replicas === null ? count.total : Math.min(dep.replicas, count.total) } };
    },
  );

  app.put<{ Params: { model_id: string }; Body: { instance_type: InstanceType; threads?: number } }>(
    '/api/v1/library/deployments/:model_id/instance-type',
    {
      config: onModel('deploy'),
      schema: {
        summary: 'Move a library model to another instance type without failing a request (202)',
        params: modelParams,
        body: { type: 'object', required: ['instance_type'], properties: instanceSchema },
        response: responses({ 202: deploymentSchema }),
      },
    },
    async (request, reply) => {
      const dep = await library.changeInstance(request.params.model_id, request.body.instance_type, request.body.threads ?? null);
      reply.code(202);
      return json(dep, (await library.generalNames([dep])).get(dep.modelId) ?? null);
    },
  );

  app.delete<{ Params: { model_id: string } }>(
    '/api/v1/library/deployments/:model_id',
    { config: onModel('deploy'), schema: { summary: 'Undeploy a library model', params: modelParams, response: responses({ 204: { type: 'null' } }) } },
    async (request, reply) => {
      await library.undeploy(request.params.model_id);
      reply.code(204);
      return null;
    },
  );
};
