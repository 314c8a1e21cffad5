"""A contract import-linter lacks: no module of the project imports itself through others.

``acyclic_siblings`` only compares the children of one package, so a circle through two apps
(``events.services`` → ``webhooks.services`` → ``events.services``) slips past it. This checks
every direct import ``a → b`` of the graph, function-local imports included, for a way back
from ``b`` to ``a``; a function-local import kept to dodge a circle is therefore found too.
Used by ``[tool.importlinter]`` in pyproject.toml (``contract_types``).
"""

from importlinter.application import output
from importlinter.domain.contract import Contract, ContractCheck


class AcyclicModulesContract(Contract):
    type_name = "acyclic_modules"

    def check(self, graph, verbose: bool) -> ContractCheck:
        cycles: list[list[str]] = []
        seen: set[frozenset[str]] = set()
        for importer in sorted(graph.modules):
            for imported in sorted(graph.find_modules_directly_imported_by(importer)):
                way_back = graph.find_shortest_chain(importer=imported, imported=importer)
                if way_back and frozenset(way_back) not in seen:
                    seen.add(frozenset(way_back))
                    cycles.append([importer, *way_back])
        return ContractCheck(kept=not cycles, metadata={"cycles": cycles}, warnings=[])

    def render_broken_contract(self, check: ContractCheck) -> None:
        for cycle in check.metadata["cycles"]:
            output.print_error(" -> ".join(cycle))
            output.new_line()
