"""ktx.yaml secrets (env: references, passwords in URLs, API keys) never reach a tool result, a report or a log."""

import json
import logging

import anyio
import pytest
from click.testing import CliRunner
from mcp import Client

from ktx_index.cli import cli
from ktx_index.embedding.embedder import HashEmbedder
from ktx_index.logs import configure
from ktx_index.mcp import build_server
from ktx_index.service import KtxIndex

pytestmark = pytest.mark.model  # the CLI commands load the real model

SECRETS = ("hunter2-password", "sk-live-0123456789", "ENV_SECRET_NAME", "s3cr3t-token")
CONFIG = f"""connections:
  warehouse:
    driver: postgres
    url: postgres://analyst:{SECRETS[0]}@db.internal:5432/prod
    password: env:{SECRETS[2]}
llm:
  provider:
    api_key: {SECRETS[1]}
storage:
  token: {SECRETS[3]}
"""


@pytest.fixture
def project(make_project):
    return make_project(
        {
            "wiki/global/revenue.md": "---\nsummary: Revenue definition\n---\nRevenue is net of refunds.\n",
            "semantic-layer/warehouse/orders.yaml": "name: orders\ntable: public.orders\ncolumns: [{name: id, type: string}]\n",
        },
        config=CONFIG,
    )


def assert_clean(text: str) -> None:
    for secret in SECRETS:
        assert secret not in text


def test_no_secret_in_any_tool_result_report_or_cli_output(project, capsys, caplog, tmp_path):
    log_file = tmp_path / "calls.log"
    handler = configure("DEBUG", log_file)  # the call log at its most verbose
    service = KtxIndex(project, embedder=HashEmbedder())
    assert_clean(service.rebuild().model_dump_json())
    assert_clean(service.status().model_dump_json())
    assert_clean(service.inspect().model_dump_json())

    async def calls() -> list[str]:
        out = []
        async with Client(build_server(service)) as client:
            for name, args in [
                ("connection_list", {}),
                ("discover_data", {"query": "url password api key token"}),
                ("discover_data", {"query": f"postgres://analyst:{SECRETS[0]}@db.internal:5432/prod"}),
                ("wiki_search", {"query": "password"}),
                ("dictionary_search", {"values": ["postgres", "analyst"]}),
                ("entity_details", {"connectionId": "warehouse", "entities": [{"table": "orders"}]}),
                ("sl_read_source", {"connectionId": "warehouse", "sourceName": "orders"}),
                ("wiki_read", {"key": "revenue"}),
            ]:
                result = await client.call_tool(name, args)
                out.append(json.dumps(result.structured_content) + "".join(c.text for c in result.content))
        return out

    for text in anyio.run(calls):
        assert_clean(text)
    for command in (["status"], ["inspect", "--json"], ["rebuild", "--json"], ["search", "password"]):
        result = CliRunner().invoke(cli, [*command, "--project", str(project)])
        assert_clean(result.output)
    assert_clean(capsys.readouterr().err + caplog.text)
    logging.getLogger("ktx_index").removeHandler(handler)
    handler.close()
    logged = log_file.read_text()
    assert logged.count('"tool.call"') == 8  # every call logged, none with a secret
    assert_clean(logged)
    service.close()
