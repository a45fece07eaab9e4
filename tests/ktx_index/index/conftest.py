"""The small project the builder's and the backlog's tests write."""

import pytest
from projects import finance_files


@pytest.fixture
def project(make_project):
    return make_project(finance_files())
