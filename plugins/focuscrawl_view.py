"""The focuscrawl view in the Airflow UI (``focuscrawl.reports.live_view``): a FastAPI app served by Airflow's
API server under ``/focuscrawl/``, shown as "focuscrawl" in its navigation, every route behind Airflow's login
(the auth manager's website access; an unauthenticated request gets 401). Steering the crawl from it (pause,
resume, budget, seeds) is for Airflow's Admin role only (:func:`admin`)."""

from fastapi import Request

from airflow.api_fastapi.app import get_auth_manager
from airflow.api_fastapi.auth.managers.models.resource_details import AccessView, ConfigurationDetails
from airflow.api_fastapi.core_api.security import GetUserDep, requires_access_view
from airflow.plugins_manager import AirflowPlugin

from focuscrawl.reports.live_view import app

PREFIX = "/focuscrawl"


def admin(request: Request, user: GetUserDep) -> str | None:
    """The Airflow user's name when they may steer the crawl, else None (the view refuses their POSTs with 403).

    A steering command changes how the running platform behaves, as a change of its configuration would, so it
    asks the auth manager for the permission Airflow guards configuration writes with:
    ``is_authorized_configuration(method="PUT")`` (the ``requires_access_configuration`` check of Airflow's API,
    with a write method; Airflow's own API only ever reads the configuration, so no one gets this permission by
    editing anything else). An auth manager that maps roles to permissions (FAB, Keycloak) answers it for its
    Admin role. The Simple auth manager grants configuration writes from its Op role up, so for its users (a
    ``role`` of their own: ``AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS``, ``user:admin`` in
    ``focuscrawl.services.airflow``) the role must also be Admin itself."""
    if not get_auth_manager().is_authorized_configuration(
            method="PUT", details=ConfigurationDetails(section="focuscrawl"), user=user):
        return None
    role = getattr(user, "role", None)
    if role is not None and str(role).upper() != "ADMIN":
        return None
    return user.get_name()


class FocuscrawlViewPlugin(AirflowPlugin):
    name = "focuscrawl_view"
    fastapi_apps = [{"app": app(requires_access_view(AccessView.WEBSITE), admin), "url_prefix": PREFIX,
                     "name": "focuscrawl"}]
    # a button of its own in the navigation, the view framed in Airflow's page at /plugin/focuscrawl
    external_views = [{"name": "focuscrawl", "href": f"{PREFIX}/", "url_route": "focuscrawl", "destination": "nav",
                       "nav_top_level": True}]
