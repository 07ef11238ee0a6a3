"""Payload encryption: the AES-256-GCM codec, a real agent run whose history holds only
ciphertext, the codec server (HTTP protocol of the Web UI and the CLI) and the real `temporal`
CLI decoding through it."""

from __future__ import annotations

import base64
import dataclasses
import json
import os
import subprocess
import sys
import urllib.error
import urllib.request
import uuid
from collections.abc import AsyncIterator, Iterator
from contextlib import AsyncExitStack, suppress
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from google.protobuf import json_format
from google.protobuf.message import Message
from temporalio.api.common.v1 import Payload, Payloads
from temporalio.api.history.v1 import History, HistoryEvent
from temporalio.client import Client
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.testing import WorkflowEnvironment

from durable_agents.activities.demo_model import DemoChatModel
from durable_agents.contracts.agent_input import AgentInput
from durable_agents.contracts.agent_result import AgentResult
from durable_agents.runtime.codec import (
    ENCODING,
    KEY_ID_KEY,
    EncryptionCodec,
    PayloadDecryptionError,
    codec_from_env,
    data_converter,
    generate_key,
    parse_key,
    parse_keyring,
)
from durable_agents.runtime.codec_server import CodecHTTPServer, main, server_from_env
from durable_agents.runtime.settings import EnvironmentSettings
from durable_agents.runtime.temporal_client import connect
from tests.conftest import BIN, started_workers

ROOT = Path(__file__).resolve().parents[1]
PROMPT = "What is 17 * 25?"
SECRET = b"17 * 25"
TOKEN = "codec-token-" + uuid.uuid4().hex
UI_ORIGIN = "http://localhost:8233"


def plain(value: Any) -> Payload:
    return pydantic_data_converter.payload_converter.to_payloads([value])[0]


def new_key() -> bytes:
    return parse_key(generate_key())


# -- the codec ---------------------------------------------------------------------------------


async def test_round_trip_hides_data_and_metadata() -> None:
    codec = EncryptionCodec(new_key(), "k1")
    original = [plain({"prompt": PROMPT}), plain("second"), Payload()]
    encoded = await codec.encode(original)
    assert len(encoded) == 3
    for payload in encoded:
        assert dict(payload.metadata) == {"encoding": ENCODING, KEY_ID_KEY: b"k1"}
        assert SECRET not in payload.data and b"json/plain" not in payload.data
    assert await codec.decode(encoded) == original
    assert (await codec.decode(await codec.encode([original[0]])))[0].metadata[
        "encoding"
    ] == b"json/plain"


async def test_each_payload_gets_its_own_nonce() -> None:
    codec = EncryptionCodec(new_key())
    first, second = await codec.encode([plain(PROMPT), plain(PROMPT)])
    assert first.data[:12] != second.data[:12]
    assert first.data != second.data


@pytest.mark.parametrize("position", [0, 12, -1])  # nonce, ciphertext, tag
async def test_tampering_is_detected(position: int) -> None:
    codec = EncryptionCodec(new_key(), "k1")
    [encoded] = await codec.encode([plain(PROMPT)])
    data = bytearray(encoded.data)
    data[position] ^= 0x01
    tampered = Payload(metadata=encoded.metadata, data=bytes(data))
    with pytest.raises(PayloadDecryptionError, match="tampered"):
        await codec.decode([tampered])


async def test_relabelled_key_id_or_truncated_payload_is_refused() -> None:
    key = new_key()
    codec = EncryptionCodec(key, "k1", previous_keys={"k0": key})
    [encoded] = await codec.encode([plain(PROMPT)])
    relabelled = Payload(metadata={**encoded.metadata, KEY_ID_KEY: b"k0"}, data=encoded.data)
    with pytest.raises(PayloadDecryptionError, match="failed authentication"):
        await codec.decode([relabelled])  # the key id is authenticated data
    truncated = Payload(metadata=encoded.metadata, data=encoded.data[:20])
    with pytest.raises(PayloadDecryptionError, match="truncated"):
        await codec.decode([truncated])
    anonymous = Payload(metadata={"encoding": ENCODING}, data=encoded.data)
    with pytest.raises(PayloadDecryptionError, match=KEY_ID_KEY):
        await codec.decode([anonymous])
    nonce = os.urandom(12)
    garbage = AESGCM(key).encrypt(nonce, b"\xff\xff not a payload", b"k1")
    forged = Payload(metadata=encoded.metadata, data=nonce + garbage)
    with pytest.raises(PayloadDecryptionError, match="does not hold a Temporal payload"):
        await codec.decode([forged])


async def test_unknown_key_id_is_refused_with_a_clear_message() -> None:
    [encoded] = await EncryptionCodec(new_key(), "2025-q1").encode([plain(PROMPT)])
    reader = EncryptionCodec(new_key(), "2025-q2", previous_keys={"2024-q4": new_key()})
    with pytest.raises(PayloadDecryptionError) as caught:
        await reader.decode([encoded])
    message = str(caught.value)
    assert "unknown key id '2025-q1'" in message
    assert "2024-q4, 2025-q2" in message
    assert "AGENT_PAYLOAD_PREVIOUS_KEYS" in message


async def test_unencrypted_payloads_pass_through() -> None:
    codec = EncryptionCodec(new_key())
    old = [plain({"prompt": PROMPT}), Payload(metadata={"encoding": b"binary/null"})]
    decoded = await codec.decode(old)
    assert decoded == old


async def test_key_rotation() -> None:
    old_key, new_key_ = new_key(), new_key()
    before = EncryptionCodec(old_key, "v1")
    after = EncryptionCodec(new_key_, "v2", previous_keys={"v1": old_key})
    [written_before] = await before.encode([plain("written with v1")])
    [written_after] = await after.encode([plain("written with v2")])
    assert written_after.metadata[KEY_ID_KEY] == b"v2"
    assert await after.decode([written_before, written_after]) == [
        plain("written with v1"),
        plain("written with v2"),
    ]
    with pytest.raises(PayloadDecryptionError, match="unknown key id 'v2'"):
        await before.decode([written_after])
    # decode-only: encryption switched off, old histories still readable
    retired = EncryptionCodec(None, previous_keys={"v1": old_key, "v2": new_key_})
    assert await retired.encode([plain("now plain")]) == [plain("now plain")]
    assert await retired.decode([written_before]) == [plain("written with v1")]


def test_bad_keys_are_refused_without_echoing_them() -> None:
    with pytest.raises(ValueError, match="32 bytes"):
        EncryptionCodec(b"short", "k")
    with pytest.raises(ValueError, match="at least one key"):
        EncryptionCodec(None)
    with pytest.raises(ValueError, match="key id"):
        EncryptionCodec(new_key(), "")
    with pytest.raises(ValueError, match="twice"):
        EncryptionCodec(new_key(), "a", previous_keys={"a": new_key()})
    secret = "not-base64-!!secret!!"
    with pytest.raises(ValueError, match="not valid base64") as caught:
        parse_key(secret)
    assert secret not in str(caught.value)
    with pytest.raises(ValueError, match="must be 32 bytes"):
        parse_key(base64.b64encode(b"x" * 16).decode())
    with pytest.raises(ValueError, match="id=base64key"):
        parse_keyring("justakey")


def test_generate_key_and_command_line() -> None:
    assert len(parse_key(generate_key())) == 32
    assert generate_key() != generate_key()
    done = subprocess.run(
        [sys.executable, "-m", "durable_agents.runtime.codec"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert len(parse_key(done.stdout)) == 32


def test_data_converter_and_settings() -> None:
    assert data_converter(None, "default") is pydantic_data_converter
    key = new_key()
    converter = data_converter(key, "k9")
    assert isinstance(converter.payload_codec, EncryptionCodec)
    assert converter.payload_codec.key_id == "k9"
    assert converter.payload_converter_class is pydantic_data_converter.payload_converter_class
    decode_only = data_converter(None, "default", previous_keys={"old": key})
    assert isinstance(decode_only.payload_codec, EncryptionCodec)
    assert decode_only.payload_codec.key_id is None

    text = base64.b64encode(key).decode()
    settings = EnvironmentSettings.from_env(
        {"AGENT_PAYLOAD_KEY": text, "AGENT_PAYLOAD_KEY_ID": "k9"}
    )
    assert settings.payload_key is not None
    assert parse_key(settings.payload_key.get_secret_value()) == key
    assert settings.payload_key_id == "k9"
    assert text not in repr(settings)
    assert EnvironmentSettings.from_env({}).payload_key is None
    assert EnvironmentSettings.from_env({}).payload_key_id == "default"

    assert codec_from_env({}) is None
    env = {"AGENT_PAYLOAD_KEY": text, "AGENT_PAYLOAD_PREVIOUS_KEYS": f"old={generate_key()}"}
    from_env = codec_from_env(env)
    assert from_env is not None
    assert (from_env.key_id, from_env.key_ids) == ("default", ["default", "old"])


# -- a real run with encryption on client and worker -------------------------------------------


@dataclasses.dataclass
class EncryptedRun:
    workflow_id: str
    address: str
    key: bytes
    result: AgentResult
    history: History

    def payloads(self) -> list[Payload]:
        """Every payload the data converter wrote (so the codec encrypted)."""
        return split_payloads(self.history)[0]

    def clear_payloads(self) -> list[Payload]:
        """The payloads Temporal keeps in clear by design, whatever the data converter."""
        return split_payloads(self.history)[1]


SDK_MARKER_DATA = {("core_local_activity", "data"), ("core_patch", "patch-data")}
"""Marker details the SDK core writes as plain JSON, never through the codec: a local
activity's bookkeeping (its type, id, attempt, times) and a patch's id. The local activity's
result (detail `result`) and its summary go through the codec like any payload."""


def split_payloads(history: History) -> tuple[list[Payload], list[Payload]]:
    """(the data converter's payloads, those kept in clear) of a history. In clear: search
    attributes (the SDK sets `TemporalChangeVersion` to the patches a run took) and the
    SDK's own marker data."""
    ours: list[Payload] = []
    clear: list[Payload] = []
    for event in history.events:
        if event.HasField("upsert_workflow_search_attributes_event_attributes"):
            clear += iter_payloads(event)
            continue
        if not event.HasField("marker_recorded_event_attributes"):
            ours += iter_payloads(event)
            continue
        attrs = event.marker_recorded_event_attributes
        for key, details in attrs.details.items():
            into = clear if (attrs.marker_name, key) in SDK_MARKER_DATA else ours
            into += details.payloads
        rest = HistoryEvent()
        rest.CopyFrom(event)
        rest.marker_recorded_event_attributes.details.clear()
        ours += iter_payloads(rest)
    return ours, clear


def iter_payloads(message: Message) -> Iterator[Payload]:
    """Every `Payload` anywhere inside a proto message."""
    if isinstance(message, Payload):
        yield message
        return
    for field, value in message.ListFields():
        if field.message_type is None:
            continue
        if field.message_type.GetOptions().map_entry:
            if field.message_type.fields_by_name["value"].message_type is not None:
                for item in value.values():
                    yield from iter_payloads(item)
        elif field.is_repeated:
            for item in value:
                yield from iter_payloads(item)
        else:
            yield from iter_payloads(value)


@pytest.fixture(scope="module")
async def encrypted_run(
    temporal_env: WorkflowEnvironment, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[EncryptedRun]:
    address = temporal_env.client.service_client.config.target_host
    key = new_key()
    codec_client = await connect(address, "default", payload_key=key, key_id="test-key")
    workspace = tmp_path_factory.mktemp("codec-workspace")
    workflow_id = f"encrypted-{uuid.uuid4()}"
    async with AsyncExitStack() as stack:
        queue = await started_workers(stack, codec_client, DemoChatModel(), workspace)
        handle = await codec_client.start_workflow(
            "AgentWorkflow",
            AgentInput(prompt=PROMPT),
            id=workflow_id,
            task_queue=queue,
            result_type=AgentResult,
        )
        result = await handle.result()
    raw = temporal_env.client.get_workflow_handle(workflow_id)  # no codec
    history = History(events=(await raw.fetch_history()).events)
    yield EncryptedRun(workflow_id, address, key, result, history)


async def test_encrypted_run_works_and_history_holds_only_ciphertext(
    encrypted_run: EncryptedRun, temporal_env: WorkflowEnvironment
) -> None:
    assert encrypted_run.result.answer == "The answer is 425."
    assert [s.tool for s in encrypted_run.result.steps] == ["calculator"]

    history_json = json.dumps(json_format.MessageToDict(encrypted_run.history))
    assert PROMPT not in history_json and "17 * 25" not in history_json
    payloads = encrypted_run.payloads()
    assert len(payloads) >= 8  # input, activity inputs/results, summaries, the result
    for payload in payloads:
        assert payload.metadata["encoding"] == ENCODING, payload.metadata
        assert payload.metadata[KEY_ID_KEY] == b"test-key"
        assert SECRET not in payload.data
    # The calculator ran as a local activity: its result and summary are encrypted (above). In
    # clear, by design (docs/encryption.md, "Not encrypted"): the SDK's marker data of which
    # activity ran, when and at which attempt; the id of the patch every new run takes
    # (`agent-definition-once`: its marker, and the SDK's `TemporalChangeVersion` that lists it).
    clear = [json.loads(p.data) for p in encrypted_run.clear_payloads()]
    assert [d if isinstance(d, list) else d.get("activity_type") or d["id"] for d in clear] == [
        "agent-definition-once",
        ["agent-definition-once"],
        "calculator",
    ]
    assert SECRET.decode() not in json.dumps(clear)

    # the codec-less client cannot read the result; the codec client can
    raw = temporal_env.client.get_workflow_handle(encrypted_run.workflow_id)
    with pytest.raises(KeyError, match="binary/encrypted"):
        await raw.result()
    codec_client = await Client.connect(
        encrypted_run.address, data_converter=data_converter(encrypted_run.key, "test-key")
    )
    again = await codec_client.get_workflow_handle(
        encrypted_run.workflow_id, result_type=AgentResult
    ).result()
    assert again == encrypted_run.result

    codec = EncryptionCodec(encrypted_run.key, "test-key")
    decoded = b"".join(p.data for p in await codec.decode(payloads))
    assert SECRET in decoded


# -- the codec server --------------------------------------------------------------------------


@pytest.fixture
def codec_server(encrypted_run: EncryptedRun) -> Iterator[CodecHTTPServer]:
    codec = EncryptionCodec(encrypted_run.key, "test-key")
    with CodecHTTPServer(codec, port=0, origins=[UI_ORIGIN], token=TOKEN) as server:
        yield server


def post(
    url: str, body: bytes | str, token: str | None = TOKEN, origin: str | None = None
) -> tuple[int, dict[str, str], bytes]:
    headers = {"Content-Type": "application/json", "X-Namespace": "default"}
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    if origin is not None:
        headers["Origin"] = origin
    data = body.encode() if isinstance(body, str) else body
    request = urllib.request.Request(url, data=data, headers=headers, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, dict(response.headers), response.read()
    except urllib.error.HTTPError as error:
        return error.code, dict(error.headers), error.read()


def payloads_json(payloads: list[Payload]) -> str:
    return json_format.MessageToJson(Payloads(payloads=payloads))


def parse_payloads(body: bytes) -> list[Payload]:
    return list(json_format.Parse(body, Payloads()).payloads)


def test_codec_server_decodes_history_payloads(
    codec_server: CodecHTTPServer, encrypted_run: EncryptedRun
) -> None:
    encrypted = encrypted_run.payloads()
    status, headers, body = post(
        codec_server.url + "/decode", payloads_json(encrypted), origin=UI_ORIGIN
    )
    assert status == 200, body
    assert headers["Access-Control-Allow-Origin"] == UI_ORIGIN
    assert headers["Content-Type"] == "application/json"
    decoded = parse_payloads(body)
    assert len(decoded) == len(encrypted)
    assert all(p.metadata["encoding"] != ENCODING for p in decoded)
    assert any(SECRET in p.data for p in decoded)
    # the wire format: base64 metadata and data, as the Web UI and the CLI send it
    first = json.loads(body)["payloads"][0]
    assert base64.b64decode(first["metadata"]["encoding"]) == b"json/plain"


def test_codec_server_requires_the_token(
    codec_server: CodecHTTPServer, encrypted_run: EncryptedRun
) -> None:
    body = payloads_json(encrypted_run.payloads()[:1])
    for token in (None, "wrong-token", ""):
        status, headers, answer = post(codec_server.url + "/decode", body, token=token)
        assert status == 401, token
        assert headers["WWW-Authenticate"].startswith("Bearer")
        assert SECRET not in answer
    status, _, _ = post(codec_server.url + "/encode", payloads_json([plain("x")]), token=None)
    assert status == 401


def test_codec_server_encode_round_trip(codec_server: CodecHTTPServer) -> None:
    original = [plain({"prompt": PROMPT}), plain([1, 2, 3])]
    status, _, body = post(codec_server.url + "/encode", payloads_json(original))
    assert status == 200, body
    encoded = parse_payloads(body)
    assert all(p.metadata["encoding"] == ENCODING for p in encoded)
    assert all(SECRET not in p.data for p in encoded)
    status, _, body = post(codec_server.url + "/decode", payloads_json(encoded))
    assert status == 200, body
    assert parse_payloads(body) == original
    # endpoints behind a path prefix (e.g. one per namespace) work as well
    status, _, body = post(codec_server.url + "/default/decode", payloads_json(encoded))
    assert status == 200 and parse_payloads(body) == original


def test_codec_server_cors_and_errors(codec_server: CodecHTTPServer) -> None:
    def preflight(origin: str) -> tuple[int, dict[str, str]]:
        request = urllib.request.Request(
            codec_server.url + "/decode",
            method="OPTIONS",
            headers={
                "Origin": origin,
                "Access-Control-Request-Method": "POST",
                "Access-Control-Request-Headers": "content-type,x-namespace,authorization",
                "Access-Control-Request-Private-Network": "true",
            },
        )
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, dict(response.headers)

    status, headers = preflight(UI_ORIGIN)
    assert status == 204
    assert headers["Access-Control-Allow-Origin"] == UI_ORIGIN
    assert "POST" in headers["Access-Control-Allow-Methods"]
    allowed = headers["Access-Control-Allow-Headers"].lower()
    assert all(h in allowed for h in ("content-type", "x-namespace", "authorization"))
    assert headers["Access-Control-Allow-Credentials"] == "true"
    assert headers["Access-Control-Allow-Private-Network"] == "true"
    _, headers = preflight("https://evil.example")
    assert "Access-Control-Allow-Origin" not in headers

    status, _, body = post(codec_server.url + "/decode", "not json")
    assert status == 400 and b"not JSON Payloads" in body
    status, _, _ = post(codec_server.url + "/elsewhere", payloads_json([]))
    assert status == 404
    foreign = EncryptionCodec(new_key(), "other-key").encrypt(plain(PROMPT))
    status, _, body = post(codec_server.url + "/decode", payloads_json([foreign]))
    assert status == 400 and b"unknown key id 'other-key'" in body


def test_codec_server_from_env_and_command_line(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ValueError, match="AGENT_PAYLOAD_KEY is not set"):
        server_from_env(port=0, env={"AGENT_PAYLOAD_STORE": "off"})
    env = {"AGENT_PAYLOAD_KEY": generate_key(), "AGENT_CODEC_TOKEN": "t"}
    with server_from_env(port=0, env=env) as server:
        assert server.token == "t" and server.codec is not None
        assert server.codec.key_id == "default"
    monkeypatch.delenv("AGENT_PAYLOAD_KEY", raising=False)
    monkeypatch.delenv("AGENT_PAYLOAD_PREVIOUS_KEYS", raising=False)
    monkeypatch.setenv("AGENT_PAYLOAD_STORE", "off")  # (with a store it serves without a key)
    with pytest.raises(SystemExit) as caught:
        main(["--port", "0"])
    assert caught.value.code == 2


# -- the real temporal CLI through the codec server --------------------------------------------


def temporal_show(run: EncryptedRun, *extra: str) -> subprocess.CompletedProcess[str]:
    command = [
        str(BIN / "temporal"),
        "workflow",
        "show",
        "--workflow-id",
        run.workflow_id,
        "--address",
        run.address,
        "--output",
        "json",
        *extra,
    ]
    env = {k: v for k, v in os.environ.items() if not k.startswith("TEMPORAL_CODEC")}
    return subprocess.run(command, capture_output=True, text=True, timeout=60, env=env)


def decoded_texts(output: str) -> str:
    """The CLI's JSON plus the base64-decoded contents of every payload `data` in it."""
    texts = [output]

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            for name, value in node.items():
                if name == "data" and isinstance(value, str):
                    with suppress(ValueError):
                        texts.append(base64.b64decode(value).decode("utf-8", errors="replace"))
                walk(value)
        elif isinstance(node, list):
            for item in node:
                walk(item)

    walk(json.loads(output))
    return "\n".join(texts)


def test_temporal_cli_decodes_through_the_codec_server(
    codec_server: CodecHTTPServer, encrypted_run: EncryptedRun
) -> None:
    with_codec = temporal_show(
        encrypted_run, "--codec-endpoint", codec_server.url, "--codec-auth", f"Bearer {TOKEN}"
    )
    assert with_codec.returncode == 0, with_codec.stderr
    assert PROMPT in decoded_texts(with_codec.stdout)
    assert "binary/encrypted" not in with_codec.stdout

    without_codec = temporal_show(encrypted_run)
    assert without_codec.returncode == 0, without_codec.stderr
    assert "17 * 25" not in decoded_texts(without_codec.stdout)

    # a wrong token: the server answers 401 and the CLI gives up (it retries until the timeout)
    wrong_token = temporal_show(
        encrypted_run,
        "--codec-endpoint",
        codec_server.url,
        "--codec-auth",
        "Bearer nope",
        "--command-timeout",
        "2s",
    )
    assert wrong_token.returncode != 0, wrong_token.stdout
    assert "17 * 25" not in wrong_token.stdout + wrong_token.stderr
