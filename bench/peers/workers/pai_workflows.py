"""The Pydantic AI peer's workflows, one module per agent (`bench.peers.workers.pai_agents`)."""

from bench.peers.workers.pai_approve import PydanticAIApprove
from bench.peers.workers.pai_calc import PydanticAICalc
from bench.peers.workers.pai_calc_wf import PydanticAICalcWf
from bench.peers.workers.pai_fixed import PydanticAIFixed
from bench.peers.workers.pai_session import PydanticAISession

WORKFLOWS = [
    PydanticAICalc,
    PydanticAICalcWf,
    PydanticAIFixed,
    PydanticAIApprove,
    PydanticAISession,
]
