/**
 * The `kind` and `status` values of the Move datasets, from the REST API's
 * `type` and `vm_status`.
 *
 * kind: the REST type in the spec's style (the one value it shows is
 * `UserTransaction`):
 *
 * | REST `type`                    | `kind`                       |
 * |--------------------------------|------------------------------|
 * | `user_transaction`             | `UserTransaction`            |
 * | `block_metadata_transaction`   | `BlockMetadataTransaction`   |
 * | `state_checkpoint_transaction` | `StateCheckpointTransaction` |
 * | `block_epilogue_transaction`   | `BlockEpilogueTransaction`   |
 * | `genesis_transaction`          | `GenesisTransaction`         |
 * | `validator_transaction`        | `ValidatorTransaction`       |
 *
 * A type the API adds later maps the same way (snake case to Pascal case), and is added to
 * MOVE_KINDS (src/datasets/move.ts), the values a `kind` filter accepts.
 *
 * status: `Success`, or the failed `ExecutionStatus` variant the `vm_status`
 * text was printed from (aptos-core `api/types` `explain_vm_status`): `OutOfGas`,
 * `MoveAbort`, `ExecutionFailure`, `MiscellaneousError`.
 */

/** The `kind` of a REST transaction type. */
export function kindOf(restType: string): string {
  return restType
    .split('_')
    .map(w => w.charAt(0).toUpperCase() + w.slice(1))
    .join('')
}

/** The `status` of a committed transaction. */
export function statusOf(success: boolean, vmStatus: string): string {
  if (success) return 'Success'
  if (/^Out of gas/i.test(vmStatus)) return 'OutOfGas'
  if (/^Move abort/i.test(vmStatus)) return 'MoveAbort'
  if (/^Execution failed/i.test(vmStatus)) return 'ExecutionFailure'
  return 'MiscellaneousError'
}
