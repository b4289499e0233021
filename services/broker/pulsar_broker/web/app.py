"""The broker's aiohttp application: every HTTP route, and errors shaped like Apache's.

`create_app(service)` is what `pulsar standalone` serves on webServicePort.
Each route module owns one area of the admin API and adds its routes here.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable

from aiohttp import web
from aiohttp.typedefs import Middleware
from pulsar_common import errors as common_errors
from pulsar_common import naming

from pulsar_broker import errors
from pulsar_broker.managed_ledger import errors as ml_errors
from pulsar_broker.service.broker_service import BrokerService
from pulsar_broker.web import auth as web_auth
from pulsar_broker.web import (
    bookies,
    broker_stats,
    brokers,
    bundles,
    clusters,
    dynamic_config,
    functions,
    http_limits,
    isolation_policies,
    lookup,
    metrics,
    namespace_metadata,
    namespaces,
    packages,
    permissions,
    rates,
    resource_quotas,
    rest,
    schemas,
    subscriptions,
    tenants,
    topic_messages,
    topic_policies,
    topic_properties,
    topic_trim,
    topics,
)

log = logging.getLogger(__name__)

#: Largest request body accepted (policies, cluster data, message ids are small).
CLIENT_MAX_SIZE_BYTES = 1024 * 1024

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


@web.middleware
async def apache_errors(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Turn every failure into `{"reason": ...}` with the status Apache uses for it."""
    try:
        return await handler(request)
    except web.HTTPException as exc:
        if exc.status < 400:
            raise
        return rest.error_json(exc.status, exc.reason)
    except errors.BundleOwnedElsewhereError as exc:
        # As Apache does: the same request, on the broker that serves the topic.
        raise web.HTTPTemporaryRedirect(exc.owner_http_url + request.path_qs) from exc
    except errors.BrokerError as exc:
        return rest.error_json(exc.http_status, str(exc))
    except naming.InvalidTopicNameError as exc:
        return rest.error_json(412, str(exc))
    except ml_errors.ManagedLedgerTerminatedError as exc:
        return rest.error_json(412, str(exc) or "Topic is terminated")
    except (ml_errors.ManagedLedgerError, common_errors.PulsarError) as exc:
        log.warning("%s %s failed: %r", request.method, request.path, exc)
        return rest.error_json(500, str(exc) or type(exc).__name__)
    except Exception as exc:  # The admin API must answer, whatever broke inside.
        log.exception("%s %s failed", request.method, request.path)
        return rest.error_json(500, str(exc) or type(exc).__name__)


def create_app(service: BrokerService) -> web.Application:
    """The HTTP application for one broker service (admin v2, lookup, health, metrics)."""
    limit = http_limits.concurrency_middleware(service.config)
    middlewares: list[Middleware] = [apache_errors] if limit is None else [limit, apache_errors]
    security = web_auth.middleware(service)
    if security is not None:
        middlewares.append(security)
    app = web.Application(middlewares=middlewares, client_max_size=CLIENT_MAX_SIZE_BYTES)
    app[rest.SERVICE] = service
    for module in (clusters, tenants, namespaces, bundles, topics, subscriptions, lookup,
                   dynamic_config, brokers, schemas, permissions, bookies, topic_policies,
                   resource_quotas, isolation_policies, topic_messages, topic_properties,
                   namespace_metadata, topic_trim):
        app.router.add_routes(module.routes)
    app.router.add_routes(namespace_metadata.LAST_ROUTES)
    rates.install(app, service)
    dynamic_config.install(app, service)
    broker_stats.install(app, service)
    metrics.install(app, service)
    functions.install(app)
    packages.install(app)
    return app
