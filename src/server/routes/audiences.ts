// Audiences: POST takes the YAML form of DESIGN.md section 4 as JSON ({api_version, spec:
// {audiences: [...]}}) and creates them all or none; GET lists; PUT replaces one; DELETE
// refuses an audience that a deployment routes by.
import type { FastifyPluginAsync } from 'fastify';
import type { AudienceInput, AudienceRecord, AudienceStore } from '../../realtime/audiences.js';
import { invalidArgument } from '../../errors.js';
import { UNARY_OPERATORS, BINARY_OPERATORS } from '../../realtime/conditions.js';
import { listOf, responses } from '../schemas.js';

const audienceJson = (a: AudienceRecord) => ({
  id: a.id,
  name: a.name,
  description: a.description,
  conditions: a.conditions,
  created_at: a.createdAt,
  updated_at: a.updatedAt,
});

/** src/realtime/conditions.ts's Conditions, as checked and stored (keys lower-cased). */
const conditionsSchema = {
  type: 'object',
  required: ['unary', 'binary'],
  properties: {
    unary: {
      type: 'array',
      items: {
        type: 'object',
        required: ['key', 'operator'],
        // operand is absent for PRESENT_MATCH.
        properties: { key: { type: 'string' }, operator: { type: 'string', enum: [...UNARY_OPERATORS] }, operand: { type: 'string' } },
      },
    },
    binary: {
      type: 'array',
      items: {
        type: 'object',
        required: ['key', 'operator', 'first_operand', 'second_operand'],
        properties: { key: { type: 'string' }, operator: { type: 'string', enum: [...BINARY_OPERATORS] }, first_operand: { type: 'integer' }, second_operand: { type: 'integer' } },
      },
    },
  },
} as const;

const audienceSchema = {
  type: 'object',
  required: ['id', 'name', 'description', 'conditions', 'created_at', 'updated_at'],
  properties: {
    id: { type: 'string' },
    name: { type: 'string' },
    description: { type: 'string' },
    conditions: conditionsSchema,
    created_at: { type: 'integer' },
    updated_at: { type: 'integer' },
  },
} as const;

const fileSchema = {
  type: 'object',
  required: ['spec'],
  properties: {
    api_version: { type: 'string', enum: ['v1'] },
    spec: {
      type: 'object',
      required: ['audiences'],
      properties: { audiences: { type: 'array', minItems: 1, maxItems: 1000, items: { type: 'object' } } },
    },
  },
} as const;

const idParams = { type: 'object', required: ['audience_id'], properties: { audience_id: { type: 'string', maxLength: 64 } } } as const;

// Audiences route the requests of every model, so a project-scoped key may read but not change them.
const MANAGE = { access: { action: 'manage-audiences', everyProject: 'audiences' } } as const;
const READ = { access: { action: 'read' } } as const;

type AudienceFile = { api_version?: string; spec: { audiences: AudienceInput[] } };

export const audienceRoutes: FastifyPluginAsync<{ audiences: AudienceStore }> = async (app, { audiences }) => {
  app.post<{ Body: AudienceFile }>(
    '/api/v1/audiences',
    { config: MANAGE, schema: { summary: 'Create audiences from an audience file (all or none)', body: fileSchema, response: responses({ 201: listOf('audiences', audienceSchema) }) } },
    async (request, reply) => {
      reply.code(201);
      return { audiences: (await audiences.createMany(request.body.spec.audiences)).map(audienceJson) };
    },
  );

  app.get(
    '/api/v1/audiences',
    { config: READ, schema: { summary: 'List the audiences', response: responses({ 200: listOf('audiences', audienceSchema) }) } },
    async () => ({ audiences: (await audiences.list()).map(audienceJson) }),
  );

  app.get<{ Params: { audience_id: string } }>(
    '/api/v1/audiences/:audience_id',
    { config: READ, schema: { summary: 'Get one audience', params: idParams, response: responses({ 200: audienceSchema }) } },
    async (request) => audienceJson(await audiences.get(request.params.audience_id)),
  );

  app.put<{ Params: { audience_id: string }; Body: AudienceFile }>(
    '/api/v1/audiences/:audience_id',
    { config: MANAGE, schema: { summary: 'Replace one audience (the file holds exactly one)', params: idParams, body: fileSchema, response: responses({ 200: audienceSchema }) } },
    async (request) => {
      const list = request.body.spec.audiences;
      if (list.length !== 1) throw invalidArgument(`an update takes exactly one audience; the file has ${list.length}`, 'spec.audiences');
      return audienceJson(await audiences.update(request.params.audience_id, list[0]!));
    },
  );

  app.delete<{ Params: { audience_id: string } }>(
    '/api/v1/audiences/:audience_id',
    { config: MANAGE, schema: { summary: 'Delete an audience that no deployment routes by', params: idParams, response: responses({ 204: { type: 'null' } }) } },
    async (request, reply) => {
      await audiences.delete(request.params.audience_id);
      reply.code(204);
      return null;
    },
  );
};
