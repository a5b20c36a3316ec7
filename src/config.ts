import path from 'node:path';

/** Runtime configuration, read once from the environment (see README "Configuration"). */
export interface Config {
  port: number;
  dataDir: string;
  databaseUrl?: string;
  eventStoreUrl?: string;
  s3?: { endpoint: string; accessKey: string; secretKey: string; bucket: string };
  smtpUrl?: string;
  mailFrom: string;
  jwt: { secret?: string; publicKey?: string; usingDevSecret: boolean };
  /** How long a command waits for its projections before answering (read-your-writes). */
  consistencyWaitMs: number;
  /** Largest uploaded file (each part of a multipart upload), bytes; 413 beyond. */
  maxUploadBytes: number;
}

export const DEV_JWT_SECRET = 'dev-only-secret-change-me';

export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const usingDevSecret = !env.JWT_SECRET && !env.JWT_PUBLIC_KEY;
  return {
    port: Number(env.PORT ?? 3000),
    dataDir: path.resolve(env.DATA_DIR ?? './data'),
    databaseUrl: env.DATABASE_URL || undefined,
    eventStoreUrl: env.EVENTSTORE_URL || undefined,
    s3: env.S3_ENDPOINT
      ? {
          endpoint: env.S3_ENDPOINT,
          accessKey: env.S3_ACCESS_KEY ?? '',
          secretKey: env.S3_SECRET_KEY ?? '',
          bucket: env.S3_BUCKET ?? 'coaching',
        }
      : undefined,
    smtpUrl: env.SMTP_URL || undefined,
    mailFrom: env.MAIL_FROM ?? 'Coaching <no-reply@coaching.local>',
    jwt: {
      secret: env.JWT_SECRET || (env.JWT_PUBLIC_KEY ? undefined : DEV_JWT_SECRET),
      publicKey: env.JWT_PUBLIC_KEY || undefined,
      usingDevSecret,
    },
    consistencyWaitMs: Number(env.CONSISTENCY_WAIT_MS ?? 2000),
    maxUploadBytes: Number(env.MAX_UPLOAD_BYTES ?? 200 * 1024 * 1024),
  };
}
