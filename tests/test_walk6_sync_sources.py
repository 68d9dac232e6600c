"""Walk 6, W69: a folder holding the usual ML and cloud credentials given to ``nodeweave sync``.

Two rules of one class: what is sent never includes a tool's own token store (the credential list covers the
ML and cloud tools' files, wherever SRC puts them), and SRC is never a place whose whole content is credentials
(a home itself, a credential folder), as DEST already is not. Fails before the fix (10 of 19 token files were sent;
a home and ``~/.ssh`` were taken as SRC).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from nodeweave.errors import UsageError
from nodeweave.sync.filters import build_filter
from nodeweave.sync.request import check_src

# Each a real tool's own credential file, as it sits in a home (the walk's FAKEHOME2) or a project with HF_HOME in it.
TOKEN_FILES = (
    ".cache/huggingface/token", "hf_home/huggingface/stored_tokens", ".config/gcloud/credentials.db",
    ".config/gcloud/application_default_credentials.json", ".azure/accessTokens.json",
    ".gnupg/private-keys-v1.d/key.key", ".config/gh/hosts.yml", ".npmrc", ".vault-token", ".wandb_netrc",
    ".password-store/x.gpg", ".kaggle/kaggle.json", ".databrickscfg", ".s3cfg", ".boto",
    # the list before walk 6, kept
    ".ssh/id_ed25519", ".aws/credentials", ".docker/config.json", ".netrc", ".pypirc", "id_rsa", "kubeconfig",
)


def test_every_tools_token_store_is_held_back(tmp_path):
    for rel in TOKEN_FILES:
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("secret\n")
    (tmp_path / "train.py").write_text("print('training')\n")
    sent = build_filter(tmp_path, use_gitignore=False).walk(tmp_path)
    assert sorted(sent.files) == ["train.py"], sorted(sent.files)


def test_include_secrets_still_sends_them(tmp_path):
    (tmp_path / ".vault-token").write_text("s\n")
    assert ".vault-token" in build_filter(tmp_path, include_secrets=True, use_gitignore=False).walk(tmp_path).files


@pytest.mark.parametrize("where", ["home/me", "Users/me", "var/home/me", "home/me/.ssh", "home/me/.aws/sso",
                                   "srv/me/.gnupg", "work/.password-store"])
def test_a_home_or_a_credential_folder_is_refused_as_src(where):
    with pytest.raises(UsageError, match="SRC .* is not accepted") as caught:
        check_src(Path("/") / where)  # judged by its path: nothing is read
    assert "home itself" in str(caught.value) or "credential folder" in str(caught.value)


def test_a_project_inside_a_home_is_still_a_src(tmp_path):
    check_src(Path("/home/me/project"))
    check_src(tmp_path)
