"""The focuscrawl view in the Airflow UI (``focuscrawl.reports.live_view``): a FastAPI app served by Airflow's
API server under ``/focuscrawl/``, shown as "focuscrawl" in its navigation, every route behind Airflow's login
(the auth manager's website access; an unauthenticated request gets 401)."""

from airflow.api_fastapi.auth.managers.models.resource_details import AccessView
from airflow.api_fastapi.core_api.security import requires_access_view
from airflow.plugins_manager import AirflowPlugin

from focuscrawl.reports.live_view import app

PREFIX = "/focuscrawl"


class FocuscrawlViewPlugin(AirflowPlugin):
    name = "focuscrawl_view"
    fastapi_apps = [{"app": app(requires_access_view(AccessView.WEBSITE)), "url_prefix": PREFIX, "name": "focuscrawl"}]
    # a button of its own in the navigation, the view framed in Airflow's page at /plugin/focuscrawl
    external_views = [{"name": "focuscrawl", "href": f"{PREFIX}/", "url_route": "focuscrawl", "destination": "nav",
                       "nav_top_level": True}]
