/**
 * The public face of the automation module: what other modules, src/app.ts and src/workers.ts may use of it.
 * Automation rules, their runs and the engine (dispatcher, scheduler, runner). Another module imports only this file
 * (the lint rule `modules/index-only`, docs/architecture.md).
 */
export { DOMAIN_TRIGGERS } from './automation.catalogue.ts'
export { createAutomationEngine } from './automation.engine.ts'
export { snapshotRules } from './automation.repository.ts'
export { automationModule } from './automation.routes.ts'
export { subjectOf, writerOf } from './automation.run-as.ts'
export { eventRuleForRun, findRuleForRead, findRuleForRun } from './automation.service.ts'
export { startWorkers } from './automation.workers.ts'
