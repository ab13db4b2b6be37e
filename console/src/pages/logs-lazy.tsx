// The request log page, loaded when first opened (see deploy-lazy.tsx).
import { lazyPage } from './deploy-lazy';

export const LogsPage = lazyPage(() => import('./logs').then((m) => m.RequestLogPage));
